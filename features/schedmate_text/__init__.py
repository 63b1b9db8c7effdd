"""SchedMate's job text: static metadata extraction from a job's launch command and repository
(:mod:`.extract`, the entry point) and the normalisation of model / dataset / task names (:mod:`.vocab`).

Why here and not in ``models/``: this is feature extraction (text -> ``JobMetadata`` fields), which the
semantic models and the replay's material both consume; it learns nothing and imports no model.
Parts: ``settings`` (the flat key -> value store with priorities and the key vocabularies), ``shell``
(shell statements, variables, continuations), ``pyast`` (what a Python file says: argparse, dataclass,
fire and Trainer defaults, config modules), ``resolve`` (settings -> ``JobMetadata`` fields),
``metadata`` (the fields)."""
