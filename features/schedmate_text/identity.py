"""A repository's identity: the method it implements, as its name says (issue 41, item 3).

Most research repositories implement one method and are named after it (a `RAFT` folder with `class RAFT`, an
`Informer2020` folder whose README's title is "Informer", `SASRec.pytorch`), and the model a job of theirs
trains is that method. The identity is read from the repository's own names -- the folder as cloned (for a
`<owner>+<name>` folder, the name part), the `[project] name` / `setup(name=...)`, the README's H1 title's leading
name -- each normalised (`pytorch` / `torch` / `official` / `tensorflow` parts, a trailing year and punctuation
removed: `Informer2020` -> `informer`, `dreamerv3-torch` -> `dreamerv3`, `PyTorch-YOLOv3` -> `yolov3`).

It is evidence for the model only where something independent CORROBORATES it: a class the repository defines whose
compact name is the identity's (`class RAFT`, `class SparseInst`), or the README's title naming the same thing as the
folder; and never in a toolbox or framework that builds many architectures, detected from its structure (a registry
of models: decorators or dictionaries registering many classes; many model configs naming different families; an
entry that builds whatever a hub id names, `from_pretrained(args...)` / `create_model(args...)`): there the
command's argument or config decides. `repository_identity` returns the corroborated identity or None, with the
reason, and is cached per repository.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from features.schedmate_text.describe import _first_paragraph, root_readme
from features.schedmate_text.vocab import norm

__all__ = ["normalise_identity", "identity_names", "repository_identity", "compact", "GENERIC_NAMES", "ARCHITECTURE_WORDS",
           "apply_identity", "corroborated_identity", "toolbox_reason"]

#: names that say what KIND of code a repository holds, not which method: never a model's identity
GENERIC_NAMES = frozenset({
    "gan", "gans", "vae", "vaes", "cifar", "cifar10", "cifar100", "imagenet", "mnist", "classification",
    "detection", "segmentation", "models", "model", "examples", "example", "tutorial", "tutorials", "benchmark",
    "benchmarks", "toolbox", "toolkit", "baselines", "baseline", "zoo", "transformers", "diffusion", "lightning",
    "template", "handbook", "recipes", "library", "lib", "framework", "networks", "network", "nets", "net", "image",
    "vision", "nlp", "rl", "cv", "deep", "learning", "deeplearning", "ml", "ai", "research", "code", "src", "train",
    "training", "main", "project", "repo", "implementation", "experiments", "demo", "core", "utils", "tools",
    "generative", "models", "neural", "text", "speech", "audio", "video", "graph", "gnn", "llm", "llms", "lm",
    "classification", "recognition", "reinforcement", "pretraining", "finetuning", "distributed", "trainer",
    "generative-models", "image-models", "vision-models", "pytorch", "torch", "tensorflow", "jax", "keras",
    "official", "cnns", "rnn",
})
#: architecture names a repository may be named after while its runs name a size or a variant (`resnet` runs a
#: resnet50): they corroborate an answer that starts with them, but never answer the model alone
ARCHITECTURE_WORDS = frozenset({"cnn", "lstm", "transformer", "resnet", "vit", "unet", "detr", "yolo", "gcn", "gin",
                                "vgg", "mlp", "bert", "gpt"})

# parts of a repository's name that name the framework or the release, not the method
_FRAMEWORK = re.compile(r"(?:^|[-_. ])(?:py)?torch(?:vision)?(?=$|[-_. ])|(?:^|[-_. ])(?:tensorflow|tf\d?|keras|jax|"
                        r"flax|mxnet|paddle|official|implementation|impl|code|release|repo|reimplementation)"
                        r"(?=$|[-_. ])", re.I)
_YEAR = re.compile(r"[-_. ]?(?:19|20)\d\d$")


def compact(name: str | None) -> str:
    """Lower case letters and digits only: `Conditional-DETR` -> `conditionaldetr`."""
    return re.sub(r"[^a-z0-9]+", "", str(name or "").lower())


def normalise_identity(name: str | None) -> str | None:
    """A repository name as a model name: framework / release words, a trailing year and punctuation removed,
    lower case, words joined by '-' (`SASRec.pytorch` -> `sasrec`, `Informer2020` -> `informer`); None when
    nothing specific is left (`pytorch-cifar` -> None: a generic word)."""
    if not name:
        return None
    s = str(name).strip().rsplit("/", 1)[-1]
    if "+" in s:  # an `<owner>+<name>` folder
        s = s.split("+", 1)[1]
    s = s.replace("PyTorch", "-pytorch-").replace("Pytorch", "-pytorch-")  # PyTorch-YOLOv3, Pytorch_UNet
    for _ in range(3):
        s2 = _FRAMEWORK.sub(" ", s).strip(" -_.")
        if s2 == s:
            break
        s = s2
    s = _YEAR.sub("", s)
    words = norm(s)
    if not words or len(compact(words)) < 3 or words in GENERIC_NAMES or compact(words) in GENERIC_NAMES:
        return None
    return words


_H1 = re.compile(r"^\s*#\s+(.+?)\s*$|^\s*<h1[^>]*>(.+?)</h1>", re.M | re.I)
_TITLE_NAME = re.compile(r"^\W*([A-Za-z][\w.+-]*?(?:[ -]?v\d+)?)\s*(?::|\s[-–—|]\s|\(|$)")


def _readme_title(files: dict[str, str]) -> str | None:
    """The README's first H1 title's leading name (`# RAFT: Recurrent All-Pairs ...` -> `RAFT`)."""
    found = root_readme(files)
    if found is None:
        return None
    name, text = found
    if name.endswith(".rst"):
        m = re.search(r"^(\S[^\n]*)\n[=#*]{3,}\s*$", text, re.M)
        title = m.group(1) if m else None
    else:
        m = _H1.search(text[:5000])
        title = (m.group(1) or m.group(2)) if m else None
    if not title:
        return None
    title = re.sub(r"!\[[^\]]*\]\([^)]*\)|<[^>]+>|\[([^\]]*)\]\([^)]*\)", r"\1", title).strip(" *_`")
    t = _TITLE_NAME.match(title)
    return t.group(1) if t else None


def _package_name(files: dict[str, str]) -> str | None:
    """`[project] name` of pyproject.toml, `setup(name=...)` of setup.py, `name =` of setup.cfg."""
    text = files.get("pyproject.toml")
    if text:
        m = re.search(r"^\[(?:project|tool\.poetry)\][^\[]*?^name\s*=\s*[\"']([^\"']+)", text, re.M | re.S)
        if m:
            return m.group(1)
    text = files.get("setup.py")
    if text:
        m = re.search(r"\bsetup\s*\([^)]*?\bname\s*=\s*[\"']([^\"']+)[\"']", text, re.S)
        if m:
            return m.group(1)
    text = files.get("setup.cfg")
    if text:
        m = re.search(r"^\[metadata\][^\[]*?^name\s*=\s*(\S+)", text, re.M | re.S)
        if m:
            return m.group(1)
    return None


def identity_names(files: dict[str, str], repo_name: str | None = None) -> dict[str, str]:
    """{source: normalised name} of the repository's own names: `folder`, `package`, `title`."""
    out: dict[str, str] = {}
    for source, raw in (("folder", repo_name), ("package", _package_name(files)), ("title", _readme_title(files))):
        n = normalise_identity(raw)
        if n:
            out[source] = n
    return out


_CLASS = re.compile(r"^class\s+(\w+)\s*[(:]", re.M)
# a registry of models: decorators or calls that register a class under a name
_REGISTRY = re.compile(r"^[ \t]*@[\w.]*?[._]register(?:_module|_model|_arch|_architecture)?\b|\bregister_model\s*\(|"
                       r"^[ \t]*@\w*REGISTRY\w*\.register|\bMODEL_REGISTRY\b|\bMODELS\.register", re.M)
# an entry that builds whatever a hub id / registry name the user passes names
_BUILDS_NAMED = re.compile(r"\.from_pretrained\(\s*(?:model_args|args|opt|cfg|config|script_args|training_args|"
                           r"model_config)\.|\bcreate_model\(\s*(?:args|opt|cfg|config)\.")


def _defined_classes(files: dict[str, str]) -> dict[str, str]:
    """{compact class name: file} of the classes the repository's Python files define (the first file of each)."""
    out: dict[str, str] = {}
    for path, text in files.items():
        if not path.endswith(".py") or re.search(r"(^|/)(tests?|docs?|third_party|external)/", path):
            continue
        for m in _CLASS.finditer(text):
            out.setdefault(compact(m.group(1)), f"{path}:{text.count(chr(10), 0, m.start()) + 1}")
    return out


# a named preset assigned into a table: `method_configs["nerfacto"] = TrainerConfig(` (a recipe / method registry)
_PRESET = re.compile(r"^(\w+)\[\s*[\"']([\w.+-]+)[\"']\s*\]\s*=\s*[A-Za-z_][\w.]*\(", re.M)
_SUBCLASS = re.compile(r"^class\s+(\w+)\s*\(\s*([\w.]+)", re.M)
_SKIP = re.compile(r"(^|/)(tests?|docs?|examples?|third_party|external)/")


def _presets(files: dict[str, str]) -> str | None:
    """A table of >= 5 named presets, each a configuration call (`methods["a"] = Config(...)`, ...): the repository
    runs whichever method the command names."""
    for p, t in files.items():
        if not p.endswith(".py") or _SKIP.search(p) or "]" not in t:
            continue
        tables: dict[str, set[str]] = {}
        for m in _PRESET.finditer(t):
            tables.setdefault(m.group(1), set()).add(m.group(2))
        for var, keys in tables.items():
            if len(keys) >= 5:
                return f"a table of {len(keys)} named presets ({var} in {p})"
    return None


def _model_family(files: dict[str, str]) -> str | None:
    """>= 5 modules that each define a model subclassing one base class the repository defines (`class Vits(BaseTTS)`
    in vits.py, `class GlowTTS(BaseTTS)` in glow_tts.py, ...): a family of architectures behind one interface."""
    defined: set[str] = set()
    subs: dict[str, set[str]] = {}
    for p, t in files.items():
        if not p.endswith(".py") or _SKIP.search(p) or "class " not in t:
            continue
        for m in _SUBCLASS.finditer(t):
            defined.add(m.group(1))
            subs.setdefault(m.group(2).rsplit(".", 1)[-1], set()).add(p)
    for base, paths in subs.items():
        if base in defined and len(paths) >= 5 and re.search(r"model|base|method|arch|net", base, re.I):
            return f"{len(paths)} modules define models on the base class {base}"
    return None


def toolbox_reason(files: dict[str, str]) -> str | None:
    """Why the repository is a toolbox / framework that builds many architectures (None when it is not): a model
    registry (>= 5 registrations), many model configs naming >= 4 different known families, a table of >= 5 named
    presets, >= 5 modules whose models share one base class of the repository, an entry point that builds what a hub
    id or registry name names."""
    from features.schedmate_text.vocab import known_model

    regs = 0
    for p, t in files.items():  # (line by line, only lines that can register: a regex over megabytes is slow)
        if p.endswith(".py") and ("register" in t or "REGISTRY" in t):
            regs += sum(bool(_REGISTRY.search(ln)) for ln in t.split("\n") if "register" in ln or "REGISTRY" in ln)
            if regs >= 5:
                break
    if regs >= 5:
        return f"a model registry (at least {regs} registrations)"
    fams: set[str] = set()
    for p in files:
        if re.search(r"(^|/)(configs?|recipes|experiments?)/", p) and p.endswith((".yaml", ".yml", ".py", ".json")):
            k = known_model(PurePosixPath(p).stem)
            if k:
                fams.add(re.split(r"[-\d]", k, maxsplit=1)[0] or k)
    if len(fams) >= 4:
        return f"model configs of {len(fams)} families ({', '.join(sorted(fams)[:4])}, ...)"
    presets = _presets(files)
    if presets:
        return presets
    family = _model_family(files)
    if family:
        return family
    named = sum(bool(_BUILDS_NAMED.search(t)) for p, t in files.items()
                if p.endswith(".py") and ("from_pretrained(" in t or "create_model(" in t))
    if named:
        return "its code builds the model a hub id / registry name passed to it names"
    return None


def repository_identity(files: dict[str, str], repo_name: str | None = None) -> tuple[str, str] | None:
    """(identity, corroboration) of a one-method repository, or None: the normalised name the folder / package /
    README title gives, corroborated by a class the repository defines with that compact name or by a second of
    those names agreeing (the README's title and the folder), in a repository that is not a toolbox."""
    names = identity_names(files, repo_name)
    if not names:
        return None
    if toolbox_reason(files):
        return None
    classes = _defined_classes(files)
    for source in ("folder", "package", "title"):
        n = names.get(source)
        if not n:
            continue
        where = classes.get(compact(n))
        if where:
            return n, f"the repository's {source} name, and class {n} defined at {where}"
        others = [s for s, m in names.items() if s != source and compact(m) == compact(n)]
        if others:
            return n, f"the repository's {source} name and its {others[0]} name"
    return None


# -- the identity as evidence for the model (called by extract_metadata after the evidence is attached) -------------

#: the measured basis of the confidences below, IN-SAMPLE (the mechanisms were written while looking at these
#: commands; batches 1-26 of benchmarks/realsets, 458 commands, 204 repositories; fresh batches will say more):
#: {group: (answers at or above MIN_CONFIDENCE, right)}, from `python benchmarks/bench_schedmate_text.py --real DIR
#: --commands-only`, the answers grouped by their rule (at or above the threshold; an agreement group counts every
#: answer whose rule says so, some of which stood before the agreement). Also measured: the confident model answers that
#: DISAGREED with a class-corroborated identity were 5, all right (a self-supervised method's backbone), so a
#: disagreement does not lower an answer. A near miss kept out: filling over a config's own model target would have
#: answered LDM's autoencoder run `latent-diffusion` (label autoencoder-kl), so a config's target is never replaced.
IDENTITY_RECORD: dict[str, tuple[int, int]] = {
    "model: the identity alone (IDENTITY_CONFIDENCE)": (21, 21),
    "model: an answer that agrees with a class-corroborated identity (AGREEMENT_CONFIDENCE)": (35, 35),
    "model: a stated value that starts with the repository's name or is a method it lists (NAME_AGREEMENT_CONFIDENCE)":
        (45, 45),
    "task: the identified model's family / the description (IDENTITY_TASK_CONFIDENCE)": (25, 25),
    "task: a weak answer the model's family confirms (evidence.corroborate_task)": (9, 9),
}

#: confidence of a model answered by the repository's identity alone (the class it names is defined and built by the
#: entry's code; nothing else names the model): in-sample, measured on all 458 commands of benchmarks/realsets
#: (`python benchmarks/bench_schedmate_text.py --real DIR --commands-only`): see IDENTITY_RECORD
IDENTITY_CONFIDENCE = 0.60
#: a model answer whose value starts with the corroborated identity (`--model informer` in Informer2020, a config's
#: `dit-xl-2` in DiT): two independent kinds agree, the answer stands at least at this confidence
AGREEMENT_CONFIDENCE = 0.75

_SIZE_WORD = re.compile(r"^(?:tiny|small|base|mid|medium|large|huge|giant|xl|xxl|[smlbxh]|ti|d\d{1,3}|[a-z]?\d{1,3})$")
_SIZE_KEY = re.compile(r"^(?:model_|arch_|net_)?(?:depth|size|variant|scale|width|widen_factor|wf|layers|num_layers|"
                       r"n_layers|backbone_name|model_size)$")
# an __init__ that takes the network it trains: a training method around an encoder (MoCo(base_encoder), SimCLR(encoder))
_WRAPS_ENCODER = re.compile(r"def\s+__init__\s*\(\s*self\s*,\s*(?:base_)?encoder\b")


def _class_name(files: dict[str, str], where: str) -> tuple[str, str] | None:
    """(class name as written, its source text up to the next top-level line) at `path:line`."""
    path, _, line = where.rpartition(":")
    text = files.get(path)
    lines = text.split("\n") if text is not None else []
    i = int(line) - 1 if line.isdigit() else -1
    if not 0 <= i < len(lines):
        return None
    m = re.match(r"class\s+(\w+)", lines[i])
    if not m:
        return None
    end = next((j for j in range(i + 1, len(lines)) if lines[j][:1].strip() and not lines[j].startswith("#")),
               len(lines))
    return m.group(1), "\n".join(lines[i:end])


_VERSION_SUFFIX = re.compile(r"(?<=[a-z]{3})v?\d{1,2}$")


def _class_for(classes: dict[str, str], name: str) -> str | None:
    """Where a class named like the identity is defined: its compact name equal to the identity's, also with a role
    suffix (`DLRM_Net` for `dlrm`, an RL method's `DrQV2Agent`) or without the identity's version (`Dreamer` for `dreamerv3`)."""
    c = compact(name)
    for cand in dict.fromkeys((c, _VERSION_SUFFIX.sub("", c))):
        if cand in classes:
            return classes[cand]
        for suffix in ("net", "network", "model", "agent"):
            if cand + suffix in classes:
                return classes[cand + suffix]
    return None


def corroborated_identity(ex, repo_name: str | None) -> tuple[str, str, str] | None:
    """(identity, class name, file:line) where the repository's name names a class it defines, the code the entry
    runs builds (called in the entry or the modules it imports, or named there outside the class's own module: a
    registry entry `{'informer': Informer}`), that is not a training method around an encoder
    it is given; None otherwise (also in a toolbox). Cached per repository and entry."""
    cache = ex._repo.__dict__.setdefault("identity", {})
    key = (repo_name, ex.entry)
    if key in cache:
        return cache[key]
    out = None
    names = identity_names(ex.files, repo_name)
    repo = ex._repo.__dict__
    if names and "toolbox" not in repo:
        repo["toolbox"] = toolbox_reason(ex.files)  # (read once per repository)
    if names and repo["toolbox"] is None:
        classes = repo.get("classes")
        if classes is None:
            classes = repo["classes"] = _defined_classes(ex.files)
        from features.schedmate_text.evidence import _reachable_code

        code = None
        for source in ("folder", "package", "title"):
            n = names.get(source)
            where = _class_for(classes, n) if n else None
            if not where:
                continue
            got = _class_name(ex.files, where)
            if got is None or _WRAPS_ENCODER.search(got[1]):
                continue
            if code is None:  # the entry's code and the configs the job loads (`_target_: drqv2.DrQV2Agent`)
                code = _reachable_code(ex) + "\n" + "\n".join(ex.files.get(f, "") for f in sorted(ex.loaded))
            own = ex.files.get(where.rpartition(":")[0], "")
            # built by the entry's code: named outside its own module (`RAFT(args)`, `{'informer': Informer}`)
            if re.search(rf"(?<!class )\b{re.escape(got[0])}\s*\(", code) or \
                    re.search(rf"\b{re.escape(got[0])}\b", code.replace(own, "") if own else code):
                out = (n, got[0], where)
                break
    cache[key] = out
    return out


def _sized_command(ex) -> str | None:
    """The command states a network size the identity's name lacks (`--depth=16`, `--backbone_name tiny`)."""
    from features.schedmate_text.settings import P_OVERRIDE

    for k, v, p, s in ex.s.ranked():
        if p < P_OVERRIDE:
            continue
        leaf = k.rsplit(".", 1)[-1].lower().replace("-", "_")
        if _SIZE_KEY.match(leaf) and v is not None and str(v).strip():
            return f"--{leaf} {v}"
    return None


def _refined(name: str, files: dict[str, str], guess: str | None) -> str:
    """The identity with the size a config named after the model states (`cifar10_uvit_small` -> `uvit-small`), or
    with the version the README's first paragraph gives it (`deepspeech` -> `deepspeech2`)."""
    c = compact(name)
    if guess:
        toks = norm(guess).split("-")
        for i in range(len(toks)):
            for j in range(i + 1, min(len(toks), i + 4) + 1):
                if "".join(toks[i:j]) == c and j < len(toks) and _SIZE_WORD.match(toks[j]):
                    return "-".join(toks[i:j + 1])
    readme = (root_readme(files) or ("", ""))[1]
    versions = {compact(w) for w in re.findall(r"[A-Za-z][\w.-]*", _first_paragraph(readme))
                if re.fullmatch(re.escape(c) + r"(?:v?\d{1,2})", compact(w))}
    if len(versions) == 1:
        return versions.pop()
    return name


def apply_identity(md, ex, repo_name: str | None) -> None:
    """The corroborated repository identity as model evidence (in place, before the abstention): where the model's
    answer starts with it, the two agree and the answer stands at AGREEMENT_CONFIDENCE; where nothing answers the
    model, or only a weak guess does (a class's words, a config's or entry's name, a value judged a sub-module,
    backbone or size code, a config file's name), the identity answers at IDENTITY_CONFIDENCE -- unless the command
    states a size the identity lacks. Any other answer that names another model (stated by an argument or a config,
    even below the threshold) is left alone: measured on the 458 commands, the confident answers that disagreed with
    a corroborated identity were all right (a self-supervised method's backbone, `--arch resnet50`)."""
    if ex is None or not repo_name and not ex.files:
        return
    got = corroborated_identity(ex, repo_name)
    ev = md.evidence.get("model")
    guess = None if ev is None else ev.get("value")
    if got is None:
        agreed = _name_agreement(ev, guess, ex, repo_name)
        if agreed:
            _identity_task(md, ex, agreed)
        return
    name, cls, where = got
    from features.schedmate_text.evidence import MIN_CONFIDENCE
    from features.schedmate_text.vocab import canonical_model

    c = compact(name)
    if guess and compact(guess).startswith(c):
        sized = _sized_command(ex)
        if sized is not None and ev["kind"] in ("class", "name") and not re.search(r"\d", str(guess)):
            # a class's words agree with the name, but the command sizes the network (`--layers 40`): the size is
            # part of the model and neither states it
            ev["note"] = (ev.get("note") or "") + f"; the repository is {name}, but the command sizes it ({sized})"
            return
        if compact(guess) == c and ev["kind"] in ("class", "name"):
            # the identity's own spelling (`sasrec`, not the class's words `sas-rec`); a stated value keeps its own
            value = _refined(name, ex.files, None)
            value = canonical_model(value) or value
            md.model = ev["value"] = value
        ev["confidence"] = max(ev["confidence"], AGREEMENT_CONFIDENCE)
        ev["rule"] = f"{ev['rule']} (the repository's identity agrees: {name}, class {cls} at {where})"
        ev.pop("note", None)
        _identity_task(md, ex, name)
        return
    weak = ev is None or (ev["confidence"] < MIN_CONFIDENCE and (
        # (a class the CODE builds, named by its words, is weak; a config's own model target says what it builds)
        (ev["kind"] == "class" and not re.search(r"model target|_target_", ev.get("rule") or "")) or
        ev["kind"] == "name" or re.search(r"sub-module|backbone|size or variant", ev.get("note") or "") or
        re.search(r"-(?:ya?ml|json|py|txt|cfg)$", str(guess))))  # (a config file's name stated as the model)
    if not weak:
        return
    if name in ARCHITECTURE_WORDS:
        return  # (a bare architecture name: the run's size or variant is not said)
    sized = _sized_command(ex)
    if sized is not None:
        if ev is not None:
            ev["note"] = (ev.get("note") or "") + f"; the repository is {name}, but the command sizes it ({sized})"
        return
    value = _refined(name, ex.files, guess)
    value = canonical_model(value) or value
    md.model = value
    md.sources["model"] = f"repository identity {name}"
    new = {"value": value, "evidence": where, "kind": "identity", "confidence": IDENTITY_CONFIDENCE,
           "rule": f"repository identity {name} (its name, and class {cls} at {where} that the entry's code builds)"}
    if guess:
        new["rule"] += f" over a weak guess {guess}"
    md.evidence["model"] = new
    md.unknown.pop("model", None)
    _identity_task(md, ex, name)


#: a model value STATED by the command or a config (argument, launcher, config, code, default) that starts with the
#: repository's own name (`--model yolov3-spp` in a `yolov3` repository, `--model_name electra_small` in `electra`),
#: or is one of the methods a name lists (`--algo ppo` in `a2c-ppo-acktr-gail`),
#: the name uncorroborated by a class: two independent sources agree; in-sample basis in IDENTITY_RECORD
NAME_AGREEMENT_CONFIDENCE = 0.75
_STATED_KINDS = ("argument", "launcher", "config", "code", "default")


def _name_agreement(ev, guess, ex, repo_name: str | None) -> str | None:
    """A stated model value that starts with one of the repository's own names (folder, package, README title; a
    toolbox's included: the value is the command's, the name only agrees with it), or is one of the methods a name
    lists, stands at NAME_AGREEMENT_CONFIDENCE. Returns the name that agreed (None when none)."""
    from features.schedmate_text.evidence import _BACKBONE

    if not guess or ev is None or ev["kind"] not in _STATED_KINDS or ev["confidence"] >= NAME_AGREEMENT_CONFIDENCE:
        return None
    cache = ex._repo.__dict__.setdefault("identity_names", {})
    if repo_name not in cache:
        cache[repo_name] = identity_names(ex.files, repo_name)
    g = compact(guess)
    for source, n in cache[repo_name].items():
        # the whole name (`yolov3-spp` in `yolov3`), or one of the methods a name lists (`ppo` in `a2c-ppo-acktr`)
        # (a listed backbone, `ssd-mobilenet`'s `mobilenet`, is a part of the method, not one of several methods)
        parts = [n] + [t for t in n.split("-") if len(t) >= 3 and t not in GENERIC_NAMES and t not in ARCHITECTURE_WORDS
                       and not _BACKBONE.match(t)] if "-" in n else [n]
        hit = next((p for p in parts if (g.startswith(compact(p)) if p == n else g == compact(p))), None)
        if hit is not None:
            ev["confidence"] = NAME_AGREEMENT_CONFIDENCE
            ev["rule"] = f"{ev['rule']} (the repository's {source} name agrees: {n})"
            ev.pop("note", None)
            return hit
    return None


#: a task answered for a one-method repository whose model the identity names: the identified model's family task, or
#: the task the repository's description names (the description is about that one method); in-sample basis in
#: IDENTITY_RECORD
IDENTITY_TASK_CONFIDENCE = 0.60


def _identity_task(md, ex, name: str) -> None:
    """Where the model is the repository's corroborated identity and the task is unanswered or below the threshold:
    the identified model's family task (vocab.family_task: `deepspeech2` recognises speech), else the one task the
    repository's description names (describe.task_from_description), at IDENTITY_TASK_CONFIDENCE. A confident task
    is left as it is."""
    from features.schedmate_text.evidence import MIN_CONFIDENCE
    from features.schedmate_text.vocab import family_task

    tev = md.evidence.get("task")
    if tev is not None and tev["confidence"] >= MIN_CONFIDENCE:
        return
    task, why = family_task(md.model), f"model family of {md.model} (the repository's identity)"
    if task is None:
        from features.schedmate_text.describe import repository_description, task_from_description

        cache = ex._repo.__dict__.setdefault("description_task", {})
        key = (ex.entry, tuple(getattr(ex, "programs", [])))
        if key not in cache:
            cache[key] = task_from_description(repository_description(ex.files, ex.entry, getattr(ex, "programs", [])))
        task, why = cache[key], f"repository description of {name}, the method the repository implements"
    if task is None:
        return
    from features.schedmate_text.resolve import description_veto

    texts = ex._repo.__dict__.setdefault("description_text", {})
    key = (ex.entry, tuple(getattr(ex, "programs", [])))
    if key not in texts:
        from features.schedmate_text.describe import repository_description

        texts[key] = repository_description(ex.files, ex.entry, getattr(ex, "programs", []))
    other = description_veto(texts[key], task, why)
    if other:  # the description names a task the identity's task does not cover ("video object segmentation")
        return
    md.task = task
    md.sources["task"] = why
    md.evidence["task"] = {"value": task, "evidence": why, "kind": "identity", "confidence": IDENTITY_TASK_CONFIDENCE,
                           "rule": why}
    md.unknown.pop("task", None)
