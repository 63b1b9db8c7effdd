"""Small helpers shared by the trace loaders: reading with clear errors, parsing with counted rejects.

Reading is strict about the container and lenient about rows. A file that is missing, a directory,
unreadable, a damaged or truncated gzip / bz2 / xz stream, or not UTF-8 stops with a TraceError naming
the file (and the line, where there is one). A row with the wrong number of fields is rejected and
counted ("wrong number of fields"), never shifted: pandas would otherwise turn extra leading fields
into an index and silently move every value one column to the right.
"""
from __future__ import annotations

import bz2
import csv
import io
import lzma
import os
import re
import stat
import warnings
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from features.jobtable import (REASONS, LoadReport, TraceError, all_distinct, as_number, as_object_text,
                               arrow_numpy, is_arrow_text)

#: Compression detected by content (magic bytes) first, by suffix second.
_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\xfd7zXZ\x00": "xz", b"PK\x03\x04": "zip"}
_SUFFIX = {".gz": "gzip", ".gzip": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip"}
COMPRESSION_SUFFIXES = tuple(_SUFFIX)
#: Most fields a CSV record may have: job traces have tens of columns; pandas spends about a millisecond
#: per column, so a 100,000-column header would take minutes before any check could speak.
MAX_COLUMNS = 10_000


def check_path(path: str | Path) -> Path:
    """The path as a readable regular file, or a TraceError saying why not."""
    path = Path(path)
    if not path.exists():
        raise TraceError(path, "file not found")
    if path.is_dir():
        raise TraceError(path, "is a directory, not a trace file (pass the file itself)")
    if not path.is_file():  # a FIFO would block the read for ever, /dev/zero would fill the memory
        raise TraceError(path, "is not a regular file (a FIFO, device or socket); pass a trace file")
    if not os.access(path, os.R_OK):
        raise TraceError(path, "permission denied")
    return path


def _decompress(path: Path, data: bytes) -> bytes:
    if not data:
        raise TraceError(path, "file is empty")
    by_content = next((kind for magic, kind in _MAGIC.items() if data.startswith(magic)), None)
    by_name = _SUFFIX.get(path.suffix.lower())
    kind = by_content or by_name
    if kind is None:
        return data
    if by_content is None:
        head = data[:16].decode("ascii", "replace")
        raise TraceError(path, f"named {path.suffix} but is not {by_name}-compressed (starts with {head!r}); "
                         "rename it or compress it")
    try:
        if kind == "gzip":
            return _gunzip(data)
        if kind == "bz2":
            return bz2.decompress(data)
        if kind == "xz":
            return lzma.decompress(data)
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/")]
            if len(names) != 1:
                raise TraceError(path, f"zip archive holds {len(names)} files; expected exactly one")
            return zf.read(names[0])
    except EOFError:
        raise TraceError(path, f"truncated {kind} file (the compressed stream ends early)") from None
    except (OSError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, ValueError, RuntimeError) as exc:
        raise TraceError(path, f"corrupt {kind} file ({exc})") from None


def _gunzip(data: bytes) -> bytes:
    """All gzip members; a stream that stops early is an error, not a short file."""
    out, rest = [], data
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out.append(d.decompress(rest))
        if not d.eof:
            raise EOFError
        rest = d.unused_data.lstrip(b"\x00")
        if rest and not rest.startswith(b"\x1f\x8b"):
            raise zlib.error("trailing garbage after the gzip stream")
    return b"".join(out)


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes, decompressed when compressed (by content, else by suffix)."""
    path = check_path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceError(path, f"cannot read: {exc.strerror or exc}") from None
    return _decompress(path, data)


def read_text(path: str | Path) -> str:
    """Decompressed UTF-8 text (a leading byte-order mark is dropped); other encodings are an error."""
    data = read_bytes(path)
    return decode_utf8(path, data)


def decode_utf8(path: str | Path, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TraceError(path, f"not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line} (re-encode the "
                         "file as UTF-8)") from None
    return text[1:] if text.startswith("\ufeff") else text


def _field_counts(data: bytes, text: str) -> np.ndarray:
    """Fields per non-blank record, as pandas' C parser will see them (blank lines are skipped)."""
    if b'"' in data or data.count(b"\r") != data.count(b"\r\n"):
        return np.array([len(row) for row in csv.reader(io.StringIO(text, newline="")) if row and "".join(row).strip()],
                        dtype=np.int64)
    arr = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    starts = np.concatenate([[0], nl + 1])
    ends = np.concatenate([nl, [len(arr)]])
    commas = np.flatnonzero(arr == 44)
    counts = np.searchsorted(commas, ends) - np.searchsorted(commas, starts) + 1
    blank = np.zeros(len(counts), dtype=bool)
    for i in np.flatnonzero(counts == 1):  # a line without a comma may be blank
        blank[i] = not data[starts[i]:ends[i]].strip()
    return counts[~blank]


#: What pandas' CSV parser reads as missing by default (with dtype=str too); the fast reader uses the same
#: (tests check the list against pandas').
NA_VALUES = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A",
             "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]


#: A byte that bytes.strip() keeps (not ASCII whitespace).
_NOT_SPACE = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def _plain_width(data: bytes) -> int | None:
    """The header's field count of a file the fast reader reads exactly as pandas does (no quotes, no
    carriage return but in CRLF line ends, at least two columns and one data line), else None. pyarrow
    refuses a record of another width, so a file it reads has no short or long row; a whitespace-only
    line is such a record (one field). An empty line is checked after parsing (_has_empty_line)."""
    if b'"' in data or data.startswith((b"\n", b"\r")):
        return None
    if b"\r" in data:  # one fast scan; counting them (two slower scans) only in files that have any
        crs = data.count(b"\r")
        if crs != data.count(b"\r\n"):
            return None
    end = data.find(b"\n")
    if end < 0 or _NOT_SPACE.search(data, end + 1) is None:  # no data line (strip() would copy the whole file)
        return None
    width = data[:end].count(b",") + 1
    return width if 2 <= width <= MAX_COLUMNS else None


def _has_empty_line(data: bytes) -> bool:
    """Whether the file has an empty line (LF or CRLF) after its first. pyarrow reads one as a record whose
    first field is empty, hence missing, so the caller asks only when the first column has a missing value:
    the byte search costs 0.1-0.2 s on a 100 MB file, the null count nothing."""
    return b"\n\n" in data or b"\n\r\n" in data


def _read_arrow(data: bytes, width: int) -> pd.DataFrame | None:
    """Every field as pyarrow-backed text (None where pandas would see a missing value), or None if
    pyarrow cannot read it. Why: pandas' parser with dtype=str builds a Python string per field (20 s for
    a 1.75 M-row trace on a loaded machine); pyarrow keeps them in its buffers (3.5 s)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    cols = [f"f{i}" for i in range(width)]
    try:
        table = pacsv.read_csv(
            # a native reader over the bytes (no copy): pyarrow's threads then never call back into Python.
            # Over io.BytesIO each block read took the GIL, and a process that exited during a read-ahead
            # (an error on its command line) hung for ever: the reader's thread died waiting for the GIL
            # and arrow's thread pool waited for it at exit
            pa.BufferReader(data),
            read_options=pacsv.ReadOptions(column_names=cols, use_threads=True),
            parse_options=pacsv.ParseOptions(quote_char=False, newlines_in_values=False, ignore_empty_lines=False),
            # 32-bit offsets while parsing: pyarrow's CSV reader builds them at half the CPU of large_string's
            # (1.75 M rows x 9 columns: 0.45 s against 0.9 s); the widening cast below reuses the characters
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in cols},
                                                 null_values=NA_VALUES, strings_can_be_null=True))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # a row of another width, say: pandas reads it
        return None
    if table.column(0).null_count and _has_empty_line(data):  # pandas skips empty lines, pyarrow keeps them
        return None
    dtype = pd.StringDtype("pyarrow")
    return pd.DataFrame({i: pd.Series(pd.arrays.ArrowStringArray(table.column(c).cast(pa.large_string())), dtype=dtype)
                         for i, c in enumerate(cols)})


#: The trace being read ahead (:func:`read_ahead`): the path as given -> (its resolved path, size and
#: modification time when the read began, the call that gives what was read).
_AHEAD: dict[str, tuple[tuple[str, int, int], Any]] = {}


def _stamp(path: Path) -> tuple[str, int, int] | None:
    """(resolved path, size, modification time in ns) of a regular file, else None."""
    try:
        real = path.resolve()
        st = real.stat()
    except OSError:
        return None
    return (str(real), st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def _read_plain(path: Path, fast: bool) -> tuple[bytes, int | None, pd.DataFrame | None]:
    """The file's bytes (without a UTF-8 byte-order mark) and, when ``fast`` and the fast reader reads it
    as pandas would, its field count and pyarrow-parsed frame (else None, None)."""
    data = read_bytes(path)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    width = _plain_width(data) if fast else None
    return data, width, (_read_arrow(data, width) if width else None)


def read_ahead(path: str | Path) -> bool:
    """Start reading a CSV file and parsing it with pyarrow in a background thread, for the next
    ``read_csv(path, fast=True)`` to take over; whether a read was started (a regular, readable file).

    Why: `schedcast simulate` imports the simulator and builds its parser (0.4-0.5 s of Python) before it
    loads the trace; pyarrow reads and parses without the GIL (1.75 M rows: 0.8 s), so started first it
    runs beside that work on a second core. Any error is left for read_csv, which reads the file again
    and reports it; a file changed since the read began (size or modification time) is read again too."""
    from features.background import in_background

    path = Path(path)
    stamp = _stamp(path)
    if stamp is None or not os.access(path, os.R_OK):
        return False
    _AHEAD.clear()  # one file at a time: a read nobody took is dropped
    _AHEAD[str(path)] = (stamp, in_background(lambda: _read_plain(path, True), "trace-read-ahead"))
    return True


def _taken_ahead(path: Path) -> tuple[bytes, int | None, pd.DataFrame | None] | None:
    """What read_ahead read of ``path`` (taken once), if it read it and the file is unchanged since; else None."""
    entry = _AHEAD.pop(str(path), None) if _AHEAD else None
    if entry is None:
        return None
    stamp, taken = entry
    try:
        read = taken()
    except Exception:  # noqa: BLE001 - read_csv reads the file itself and reports what is wrong
        return None
    return read if _stamp(path) == stamp else None


def read_csv(path: str | Path, *, required: Iterable[str] = (), header: bool = True,
             names: list[str] | None = None, report: LoadReport | None = None, fast: bool = False) -> pd.DataFrame:
    """Read a CSV (optionally compressed) as text columns with exact field counts.

    Rows whose field count differs from the header's (or from ``names``) are rejected and counted
    under "wrong number of fields (expected N)" in ``report`` (else in ``frame.attrs["bad_rows"]``);
    ``report.rows_read`` counts every data row. The index is the 0-based data row in the file.

    ``fast``: a plain file (see _simple_layout) is read by pyarrow and its columns are pyarrow-backed
    text (missing values are <NA>, not NaN); the caller must handle that dtype (features.jobtable's
    as_number / to_numeric / as_object_text do). Any other file is read by pandas as before.
    """
    path = Path(path)
    ahead = _taken_ahead(path) if fast and header else None  # read_ahead read and parsed it
    data, width, frame = ahead if ahead is not None else _read_plain(path, fast and header)
    if frame is not None:  # pyarrow checked the UTF-8 of every field; _plain_width found a header and a data line
        return _finish(path, data, frame, np.full(len(frame), width), required, header, names, report)
    text = decode_utf8(path, data)
    if not text or text.isspace():
        raise TraceError(path, "file is empty")
    counts = _field_counts(data, text)
    width = int(counts.max()) if len(counts) else 1
    if width > MAX_COLUMNS:
        raise TraceError(path, f"a record has {width:,} fields; a trace has at most {MAX_COLUMNS:,} columns")
    try:
        frame = pd.read_csv(io.BytesIO(data), header=None, names=list(range(width)), dtype=str,
                            index_col=False, skip_blank_lines=True, low_memory=False)
    except (pd.errors.ParserError, ValueError) as exc:
        raise TraceError(path, f"not a readable CSV: {str(exc).strip().splitlines()[-1]}") from None
    if len(frame) != len(counts):  # pandas and csv disagree on records: trust the csv module
        counts = np.array([len(row) for row in csv.reader(io.StringIO(text, newline="")) if row and "".join(row).strip()])
        if len(frame) != len(counts):
            raise TraceError(path, f"not a readable CSV: {len(frame)} records parsed but {len(counts)} lines "
                             "found (stray quotes?)")
    return _finish(path, data, frame, counts, required, header, names, report)


def _finish(path: Path, data: bytes, frame: pd.DataFrame, counts: np.ndarray, required: Iterable[str], header: bool,
            names: list[str] | None, report: LoadReport | None) -> pd.DataFrame:
    """Header, field-count rejects and the report, the same for both readers."""
    if header:
        cols = ["" if pd.isna(v) else str(v).strip() for v in frame.iloc[0, :counts[0]]]
        seen: Counter[str] = Counter(cols)  # linear: a 100,000-column header took minutes with list.count
        dup = sorted(c for c, n in seen.items() if n > 1)
        if dup:
            raise TraceError(path, f"repeated column name(s) {dup} in the header")
        frame, counts = frame.iloc[1:], counts[1:]
    else:
        cols = list(names or [])
    good = counts == len(cols)
    bad = int((~good).sum())
    frame = (frame[good] if bad else frame).iloc[:, :len(cols)]
    frame.columns = cols
    frame.index = np.flatnonzero(good)
    if report is not None:
        if not data.endswith(b"\n"):
            report.notes.append("the last line has no line break: if the file was cut short, its last row may be "
                                "incomplete")
        report.rows_read += len(counts)
        report.reject(f"{REASONS['fields']} (expected {len(cols)})", bad)
    else:
        frame.attrs["bad_rows"] = bad
    missing = [c for c in required if c not in frame.columns]
    if missing:
        found = [str(c) for c in frame.columns]
        if all(re.fullmatch(r"[A-Za-z_][\w .\-/()]{0,63}", c) for c in found) and len(found) <= 200:
            raise TraceError(path, f"missing column(s) {missing}; found {found}")
        # not a header of column names (a file that is not a trace, e.g. /etc/passwd): its text is not echoed
        # into messages that end up in results.csv and the leaderboard
        raise TraceError(path, f"missing column(s) {missing}; the first line is not a header of column names: "
                               "not a trace file of this format")
    return frame


#: "... 12:34[:56[.789]] <offset>" — a value that names its own UTC offset.
_AWARE = re.compile(r"\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)$", re.IGNORECASE)
_YEAR = re.compile(r"^\s*([+-]?\d{4,})-\d")


def parse_datetimes(values: pd.Series, report: LoadReport, *, tz: str, column: str) -> tuple[pd.Series, pd.Series]:
    """Parse wall-clock times of zone ``tz`` to UTC; returns (times, out_of_range).

    * Values that carry their own offset (``+08:00``, ``Z``) are converted with it, the others are read
      in ``tz``; the count of the former is noted.
    * Daylight-saving changes: a wall-clock time in the repeated hour is read as its first occurrence
      (daylight time), one in the skipped hour is moved forward to the first valid instant; both are
      counted in the notes, never rejected.
    * NaT where missing or unparseable; ``out_of_range`` marks values that are dates, but outside
      what pandas can hold (e.g. year 9999), for the caller to reject as out of bounds.
    """
    out = pd.Series(pd.NaT, index=values.index, dtype="datetime64[ns, UTC]")
    oor = pd.Series(False, index=values.index)
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return out, oor  # bare numbers are not calendar times
    text = values[values.notna()] if values.hasnans else values  # no copy of a column without gaps
    if text.empty:
        return out, oor
    if not pd.api.types.is_string_dtype(text):
        text = text.astype(str)
    fast = _arrow_datetimes(text)
    if fast is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                fast = pd.to_datetime(text, errors="coerce", format="ISO8601")
            except (ValueError, TypeError, OverflowError):
                fast = None
    if fast is not None and pd.api.types.is_datetime64_dtype(fast) and fast.notna().all():
        # all naive ISO times (the common case); a zone-aware value would have given another dtype
        local = _localize(fast, tz, report, column)
        if len(local) == len(out):
            return local.set_axis(out.index).rename(None), oor
        out[fast.index] = local
        return out, oor
    text = as_object_text(text)  # the rare layouts below: exactly as pandas' parser gave them
    text = text.str.strip()
    text = text[text != ""]
    aware = text.str.contains(_AWARE)
    if aware.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            conv = pd.to_datetime(text[aware], errors="coerce", utc=True, format="mixed")
        out[conv.index] = conv
        report.notes.append(f"{int(aware.sum())} '{column}' value(s) carried their own UTC offset and were "
                            f"converted with it (the others are read as {tz})")
    naive = text[~aware]
    if len(naive):
        parsed = pd.to_datetime(naive, errors="coerce", format="ISO8601")
        retry = parsed.isna()
        if retry.any():  # other layouts ("10/09/2017 07:01"): vectorised first, one by one if that fails
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    mixed = pd.to_datetime(naive[retry], errors="coerce", format="mixed")
                except (ValueError, TypeError, OverflowError):
                    mixed = None
            if mixed is not None and pd.api.types.is_datetime64_dtype(mixed):
                parsed[retry] = mixed
                retry = parsed.isna()
        if retry.any():
            again = pd.Series(pd.NaT, index=naive.index[retry], dtype="datetime64[ns]")
            for idx, value in naive[retry].items():
                try:
                    stamp = pd.Timestamp(value)
                    if stamp is pd.NaT or stamp.tzinfo is not None:
                        continue
                    again[idx] = stamp.as_unit("ns")  # years beyond 1677..2262 fail here
                except (ValueError, TypeError, OverflowError):
                    continue
            parsed[retry] = again
        out[parsed.index] = _localize(parsed, tz, report, column)
        years = naive[parsed.isna()].str.extract(_YEAR, expand=False).dropna()
        if len(years):
            year = pd.to_numeric(years, errors="coerce")
            far = year[(year < 1678) | (year > 2261)].index
            oor[far] = True
    return out, oor


#: The one layout _arrow_datetimes reads: "YYYY-MM-DD HH:MM:SS" (or a "T" between date and time), nothing else.
_PLAIN_DATETIME = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}$"
#: The same layout as byte positions of its 19 characters: digits, "-" (45), " " (32) or "T" (84), ":" (58).
_DIGITS_AT = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]


def _plain_layout(arr) -> bool:
    """Whether every value of pyarrow text without nulls matches _PLAIN_DATETIME, read from its bytes: the
    values are 19 bytes each, so each chunk's characters form one n x 19 byte matrix whose columns are
    checked at once (a regular expression over 1.75 M values costs 0.15-0.2 s; this a tenth of it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pc.min_max(pc.binary_length(arr)).as_py() != {"min": 19, "max": 19}:
        return False
    for chunk in (arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]):
        if not len(chunk):
            continue
        _, offsets, data = chunk.buffers()
        width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        offsets = np.frombuffer(offsets, dtype=width)[chunk.offset:chunk.offset + len(chunk) + 1]
        chars = np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]].reshape(-1, 19)
        if not ((chars[:, _DIGITS_AT] - np.uint8(48) <= 9).all() and (chars[:, [4, 7]] == 45).all()
                and ((chars[:, 10] == 32) | (chars[:, 10] == 84)).all() and (chars[:, [13, 16]] == 58).all()):
            return False
    return True
#: Years that pandas' nanosecond clock holds whole (1677-09-21 .. 2262-04-11); others take pandas' path.
_NS_YEARS = (1678, 2262)


def _arrow_datetimes(text: pd.Series) -> pd.Series | None:
    """``pd.to_datetime(text, format="ISO8601")`` (naive, nanoseconds) of pyarrow-backed text without a
    missing value, when every value is a valid plain "YYYY-MM-DD HH:MM:SS" of a year in _NS_YEARS; else
    None (the caller parses with pandas, which decides every other case, invalid dates included).

    Why: pandas turns 1.75 M pyarrow strings into Python objects and parses them one by one (0.6 s on a
    loaded machine); pyarrow's ISO-8601 cast is vectorised (0.05 s). The layout is pinned by a pattern
    first, and pyarrow's cast refuses impossible dates and times (2020-02-30, 24:00:00, 23:59:60), so
    every value it returns is the instant pandas reads from the same text."""
    if not is_arrow_text(text) or text.hasnans or not len(text):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = text.array.__arrow_array__()
    try:
        if not _plain_layout(arr):
            return None
        stamps = pc.cast(arr, pa.timestamp("s"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    seconds = arrow_numpy(stamps)
    lo, hi = (np.datetime64(f"{y}-01-01", "s") for y in _NS_YEARS)
    if seconds.min() < lo or seconds.max() >= hi:
        return None
    return pd.Series(seconds.astype("datetime64[ns]"), index=text.index, name=text.name)


def _localize(parsed: pd.Series, tz: str, report: LoadReport, column: str) -> pd.Series:
    if tz.upper() in ("UTC", "ETC/UTC", "GMT"):
        return parsed.dt.tz_localize("UTC")
    try:  # the common case, one pass: no time falls in a repeated or skipped hour of the zone
        return parsed.dt.tz_localize(tz, ambiguous="raise", nonexistent="raise").dt.tz_convert("UTC")
    except Exception:  # noqa: BLE001 - such a time (or an unknown zone): the three passes below say which
        pass
    first = np.ones(len(parsed), dtype=bool)  # True = daylight time = first occurrence of a repeated hour
    try:
        local = parsed.dt.tz_localize(tz, ambiguous=first, nonexistent="shift_forward")
    except Exception as exc:  # unknown zone names and the like
        raise TraceError("<options>", f"cannot use time zone {tz!r}: {exc}") from None
    ambiguous = parsed.notna() & parsed.dt.tz_localize(tz, ambiguous="NaT", nonexistent="shift_forward").isna()
    skipped = parsed.notna() & parsed.dt.tz_localize(tz, ambiguous=first, nonexistent="NaT").isna()
    if ambiguous.any():
        report.notes.append(f"{int(ambiguous.sum())} '{column}' value(s) fell in the repeated hour of a {tz} "
                            "daylight-saving change: read as the first occurrence (daylight time)")
    if skipped.any():
        report.notes.append(f"{int(skipped.sum())} '{column}' value(s) fell in the skipped hour of a {tz} "
                            "daylight-saving change: moved forward to the first valid time")
    return local.dt.tz_convert("UTC")


def numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame[column], errors="coerce")


def reject_where(frame: pd.DataFrame, mask: pd.Series, reason: str, report: LoadReport) -> pd.DataFrame:
    """Drop rows where mask holds, counting them under reason."""
    mask = pd.Series(mask, index=frame.index).astype("boolean").fillna(False).astype(bool)
    report.reject(reason, int(mask.sum()))
    return frame[~mask] if mask.any() else frame  # nothing rejected: no copy of every column


def reject_text(frame: pd.DataFrame, column: str, report: LoadReport) -> pd.DataFrame:
    """Drop rows whose ``column`` holds something that is not a number ("<column> not a number")."""
    _, text = as_number(frame[column])
    return reject_where(frame, text, f"{column} not a number", report)


def drop_exact_duplicates(frame: pd.DataFrame, report: LoadReport) -> pd.DataFrame:
    if len(frame.columns) and all_distinct(frame.iloc[:, 0]):
        return frame  # no two rows share their first field (a job id, say): no row can repeat another
    dup = frame.duplicated(keep="first")
    report.duplicates_found += int(dup.sum())
    if dup.any():
        report.duplicates_action = "dropped (exact duplicate rows; first kept)"
    return frame[~dup]


def drop_repeated_ids(out: pd.DataFrame, report: LoadReport, what: str) -> pd.DataFrame:
    """Drop rows whose job id was already seen (first kept), counting them as duplicates."""
    ids = out["job_id"]
    if all_distinct(ids):
        return out
    dup = ids.notna() & ids.duplicated(keep="first")
    if dup.any():
        report.duplicates_found += int(dup.sum())
        before = report.duplicates_action
        report.duplicates_action = (f"dropped (exact duplicate rows and repeated {what}; first kept)"
                                    if before.startswith("dropped") else f"dropped (repeated {what}; first kept)")
    return out[~dup]


def seconds_since_start(ts: pd.Series) -> pd.Series:
    """Seconds from the earliest timestamp (finalize rebases again after rejects)."""
    return (ts - ts.min()).dt.total_seconds()
