"""The parts of SchedMate's static metadata extraction (models.schedmate.extract is the entry point):
`settings` (the flat key -> value store with priorities and the key vocabularies), `shell` (shell
statements, variables, continuations), `pyast` (what a Python file says: argparse, dataclass, fire
and Trainer defaults, config modules), `resolve` (settings -> JobMetadata fields)."""
