"""What a repository says it is for: the task named by its description (the README's title and first
paragraph nearest to the entry script, and the entry's ArgumentParser description), as a check on the task
the code's identifiers suggest (issue 41, item 3).

The code's objective identifiers are generic: a cross-entropy loss, `num_classes` and an accuracy belong to a
translator, a text recogniser and a segmenter as much as to an image classifier; a generator and a
discriminator to a vocoder and an image-to-image translator as much as to an image generator. A repository's
own description names its purpose in words. It is read only as far as its first paragraph (a "Results" or
"Usage" section lists other models and tasks: decoys), and it names a task only when exactly one task's words
occur there (a toolbox that lists five tasks says nothing about the job).
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

__all__ = ["DESCRIPTION_TASKS", "README_NAMES", "root_readme", "repository_description", "task_from_description",
           "compatible_tasks", "specialisations", "task_phrases", "disagreeing_task_phrase"]

#: a folder's README, by the names repositories give it (the first present wins)
README_NAMES = ("README.md", "readme.md", "Readme.md", "README.rst", "README.txt", "README")


def root_readme(files: dict[str, str]) -> tuple[str, str] | None:
    """(name, text) of the repository's root README that has any text, or None."""
    return next(((n, files[n]) for n in README_NAMES if files.get(n)), None)

# (pattern over the lower-cased description, task); a more specific phrase is listed before the generic one it
# contains, and a match is removed from the text before the later patterns are tried ("image-to-image
# translation" is not also "translation"; "semantic image synthesis" is not also "image synthesis")
DESCRIPTION_TASKS: tuple[tuple[str, str], ...] = (
    (r"image[- ]to[- ]image translation|unpaired (?:image )?translation|image translation|domain translation|"
     r"semantic image synthesis|style transfer|photo[- ]realistic image synthesis from (?:semantic|label)",
     "image-to-image-translation"),
    (r"(?:neural )?machine translation|\btranslation\b|\btranslat(?:e|or)\b", "translation"),
    (r"(?:scene )?text recognition|\bocr\b|optical character recognition|handwriting recognition", "text-recognition"),
    (r"panoptic segmentation", "panoptic-segmentation"),
    (r"instance segmentation", "instance-segmentation"),
    (r"semantic (?:image )?segmentation|\bsegmentation\b|\bsegmenter\b", "semantic-segmentation"),
    (r"object detect(?:ion|or)|\bdetectors?\b|\bdetection\b", "object-detection"),
    (r"text[- ]to[- ]speech|speech synthesis|\btts\b|\bvocoders?\b", "speech-synthesis"),
    (r"speech recognition|\basr\b", "speech-recognition"),
    (r"super[- ]?resolution", "image-super-resolution"),
    (r"video (?:action )?(?:classification|recognition)|action recognition", "video-classification"),
    (r"image classification|image classifiers?|imagenet classification", "image-classification"),
    (r"self[- ]supervised|contrastive (?:representation )?learning", "self-supervised-pretraining"),
    (r"reinforcement learning|\bdeep q[- ]?(?:network|learning)|\batari\b", "reinforcement-learning"),
    (r"optical flow", "optical-flow"),
    (r"(?:monocular |stereo )?depth (?:estimation|prediction)", "depth-estimation"),
    (r"time[- ]series forecasting|sequence forecasting|\bforecasting\b", "time-series-forecasting"),
    (r"recommend(?:ation|er)s?\b|collaborative filtering|click[- ]through", "recommendation"),
    (r"question answering", "question-answering"),
    (r"summari[sz]ation", "summarization"),
    (r"sentiment|text classification|natural language inference", "text-classification"),
    (r"sentence embeddings?", "sentence-embedding"),
    (r"node classification|graph convolutional network", "node-classification"),
    (r"view synthesis|neural radiance field", "novel-view-synthesis"),
    (r"language model(?:s|ing|ling)?\b", "language-modeling"),
    (r"generative adversarial|\bgans?\b|diffusion models?|image generation|image synthesis|generative models?|"
     r"variational auto-?encoders?|\bvaes?\b", "image-generation"),
)
_COMPILED = tuple((re.compile(p), t) for p, t in DESCRIPTION_TASKS)

# a task and the more specific tasks it includes: the description's general word agrees with the code's finer one
_SPECIALISES = {"image-generation": {"image-to-image-translation", "image-autoencoding", "video-generation",
                                     "speech-synthesis"},
                "semantic-segmentation": {"panoptic-segmentation", "instance-segmentation"},
                "object-detection": {"instance-segmentation", "panoptic-segmentation"},
                "image-classification": {"video-classification"},
                "self-supervised-pretraining": {"sentence-embedding"}}

_BADGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<[^>]+>|\[!\[.*?\]\(.*?\)\]\(.*?\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def specialisations(task: str) -> set[str]:
    """The tasks that specialise `task` (image-generation -> image-to-image-translation, ...)."""
    return set(_SPECIALISES.get(task, ()))


def compatible_tasks(general: str, specific: str) -> bool:
    """Whether two task names agree: equal, or one specialises the other."""
    return general == specific or specific in _SPECIALISES.get(general, ()) or general in _SPECIALISES.get(specific, ())


def _first_paragraph(text: str, limit: int = 700) -> str:
    """The README's title and its first prose paragraph (badges, images, HTML and code removed), at most
    `limit` characters: what the repository says it is, before its usage, results and news sections."""
    out: list[str] = []
    prose = 0
    fence = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        line = _LINK.sub(r"\1", _BADGE.sub(" ", line)).strip()
        if not line or re.fullmatch(r"[-=*_|: ]+", line):
            if prose and out:
                break  # the end of the first paragraph
            continue
        if line.startswith("#"):
            if prose:  # the next section
                break
            out.append(line.lstrip("#").strip())  # a title
            continue
        if re.match(r"^(?:\W*)(?:news|update|updates|table of contents|contents|installation|usage|requirements)\b",
                    line, re.I):
            break
        out.append(line)
        prose += 1
        if sum(len(x) for x in out) >= limit:
            break
    return " ".join(out)[:limit]


def repository_description(files: dict[str, str], entry: str | None = None, programs: list[str] | tuple = ()) -> str:
    """The description nearest to the entry: the README of the entry's folder or of the closest folder above it
    (the repository's root README last), its title and first paragraph; then the entry's ArgumentParser
    descriptions. Empty when there is none."""
    folders: list[str] = []
    if entry:
        p = PurePosixPath(entry).parent
        while str(p) not in ("", ".") and p != p.parent:  # an absolute entry ends at "/", its own parent
            folders.append(str(p))
            p = p.parent
    folders.append("")
    readme = ""
    for folder in folders:
        for name in README_NAMES:
            path = f"{folder}/{name}" if folder else name
            if path in files:
                readme = _first_paragraph(files[path])
                break
        if readme:
            break
    progs = " ".join(str(p) for p in programs if p)
    return (readme + (" " + progs if progs else "")).strip()


def task_from_description(text: str) -> str | None:
    """The one task the description's words name, or None (no task words, or words of several tasks that are
    not one the specialisation of the other)."""
    if not text:
        return None
    t = text.lower()
    found: list[str] = []
    for pat, task in _COMPILED:
        if pat.search(t):
            found.append(task)
            t = pat.sub(" ", t)
    if not found:
        return None
    first = found[0]
    if all(compatible_tasks(first, other) or compatible_tasks(other, first) for other in found[1:]):
        # the most specific of compatible names: "GAN for image-to-image translation" is the translation
        return next((x for x in found if x not in _SPECIALISES or not any(y in _SPECIALISES[x] for y in found)), first)
    return None


# ---- an open set of task phrases (issue 41, item 3): "<qualifiers> <task noun>" in the description -------------
#: nouns that end a task's name in prose; forms of one noun map to one canonical word
_TASK_NOUNS = {
    "segmentation": "segmentation", "segmenter": "segmentation", "detection": "detection", "detector": "detection",
    "tracking": "tracking", "tracker": "tracking", "recognition": "recognition", "recognizer": "recognition",
    "generation": "generation", "synthesis": "generation", "classification": "classification",
    "classifier": "classification", "estimation": "estimation", "retrieval": "retrieval",
    "localization": "localization", "localisation": "localization", "compression": "compression",
    "forecasting": "forecasting", "translation": "translation", "translator": "translation", "captioning": "captioning",
    "answering": "answering", "denoising": "denoising", "restoration": "restoration", "inpainting": "inpainting",
    "completion": "completion", "reconstruction": "reconstruction", "parsing": "parsing", "registration": "registration",
    "summarization": "summarization", "summarisation": "summarization", "super-resolution": "super-resolution",
}
#: words that qualify HOW a method does its task, not WHICH task it is (and function words that end a phrase)
_GENERIC_QUALIFIERS = frozenset({
    "efficient", "fast", "faster", "accurate", "simple", "strong", "robust", "real", "time", "realtime", "scalable",
    "state", "art", "end", "deep", "neural", "long", "term", "high", "quality", "improved", "better", "unified",
    "general", "universal", "open", "source", "large", "scale", "lightweight", "precise", "generic", "modern",
    "powerful", "flexible", "easy", "official", "pytorch", "tensorflow", "joint", "based", "learned", "learning",
    "towards", "toward", "dense", "single", "stage", "two", "one", "shot", "free", "semi", "weakly", "supervised",
    "self", "unsupervised", "fully", "conditional", "controllable", "multi", "modal", "task", "level", "grained",
    "fine", "coarse", "novel", "new", "better", "effective", "practical", "benchmark", "fidelity", "resolution",
    "advanced", "realistic", "photorealistic", "diverse", "stable", "reliable", "versatile", "comprehensive"})
_STOP = frozenset({"for", "of", "the", "a", "an", "and", "or", "with", "by", "on", "in", "to", "via", "using", "is",
                   "are", "from", "our", "this", "that", "as", "at", "every", "each", "all", "its", "their", "we",
                   "model", "models", "method", "methods", "framework", "toolbox", "library", "code", "codes",
                   "training", "testing", "evaluation", "script", "scripts", "implementation", "project", "repository",
                   "repo", "paper", "task", "tasks", "including", "include", "includes", "per", "like", "such",
                   "other", "various", "both", "either", "not", "no"})
#: qualifiers that name the data's modality: a phrase whose noun is the task's but whose modality is another names
#: another task ("video object segmentation" is not semantic segmentation, "molecule generation" not image generation)
_MODALITY = {
    "video": "video", "videos": "video", "audio": "audio", "speech": "audio", "tts": "audio", "voice": "audio",
    "sound": "audio", "music": "audio", "speaker": "audio", "molecule": "molecule", "molecules": "molecule",
    "molecular": "molecule", "protein": "molecule", "proteins": "molecule", "drug": "molecule", "atomistic": "molecule",
    "chemical": "molecule", "3d": "3d", "lidar": "3d", "point": "3d", "cloud": "3d", "text": "text", "language": "text",
    "sentence": "text", "word": "text", "image": "image", "images": "image", "photo": "image", "visual": "image",
    "pixel": "image", "graph": "graph", "node": "graph"}
#: the modality a task's name implies (its words through _MODALITY and these); vision tasks without one are on images
_TASK_MODALITY_WORDS = {"translation": "text", "question": "text", "summarization": "text", "semantic": "image",
                        "object": "image", "panoptic": "image", "instance": "image", "pose": "image", "depth": "image",
                        "optical": "image", "super": "image", "view": "image"}
_PHRASE = re.compile(r"((?:[a-z0-9][a-z0-9'-]*\s+){0,3})(" + "|".join(sorted(map(re.escape, _TASK_NOUNS), key=len, reverse=True))
                     + r")(?![a-z])")


def task_phrases(text: str) -> list[tuple[tuple[str, ...], str, str]]:
    """The task phrases a description names, open-ended: each `(qualifier words, canonical task noun, phrase)` for a
    task noun (segmentation, tracking, estimation, ...) and the up to three words before it that belong to it (a
    phrase stops at a function word): "Video Object Segmentation" -> ((video, object), segmentation, ...)."""
    out = []
    for m in _PHRASE.finditer((text or "").lower()):
        words = re.split(r"\s+", m.group(1).strip()) if m.group(1).strip() else []
        kept: list[str] = []
        for w in reversed(words):  # from the noun backwards to the first function word
            if w in _STOP:
                break
            kept[:0] = [w]
        qual = tuple(p for w in kept for p in re.split(r"[-']", w) if p and p not in _STOP)
        out.append((qual, _TASK_NOUNS[m.group(2)], " ".join(kept + [m.group(2)])))
    return out


def _task_words(task: str) -> set[str]:
    words = set()
    for t in {task} | specialisations(task):
        for w in t.split("-"):
            words.add(_TASK_NOUNS.get(w, w))
    return words


def _task_modalities(task: str) -> set[str]:
    parts = task.split("-")
    mods = {_MODALITY.get(w) or _TASK_MODALITY_WORDS.get(w) for w in parts} - {None}
    return mods


def disagreeing_task_phrase(text: str, task: str | None) -> str | None:
    """A task phrase of the description that names a task other than `task`, where no phrase of the description
    agrees with `task`; None otherwise. A phrase with the task's own noun disagrees only through its data's modality
    ("video object segmentation" against semantic-segmentation, "molecule generation" against image-generation); a
    phrase with another noun disagrees when a qualifier names something specific ("multi-object tracking", "human
    pose estimation", "audio compression" against a task on images) and its words name no task compatible with
    `task` ("action recognition" is video classification). A phrase agrees when its words name a compatible task or
    its noun is the task's with a qualifier from the task's name; a bare noun ("detection") is neither. The open set
    of phrases sees tasks outside the vocabulary."""
    if not text or not task:
        return None
    words, mods = _task_words(task), _task_modalities(task)
    agree, other = False, None
    for qual, noun, phrase in task_phrases(text):
        qmods = {_MODALITY[q] for q in qual if q in _MODALITY}
        if mods and qmods and not qmods & mods:  # data of another kind only ("text-to-image" is on images too)
            other = other or phrase
            continue
        named = task_from_description(" ".join(qual + (noun,))) if qual else None  # (a bare noun is neither)
        if named is not None and compatible_tasks(named, task):
            agree = True
            continue
        if noun in words:
            if set(qual) & (words - {noun}):
                agree = True
            continue
        specific = {q for q in qual if q not in _GENERIC_QUALIFIERS and not q.isdigit()
                    and (q not in _MODALITY or _MODALITY[q] not in mods)}
        if specific and other is None:
            other = phrase
    return None if agree else other
