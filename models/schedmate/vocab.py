"""Moved to :mod:`features.schedmate_text.vocab` (name normalisation, used by the extraction); this name
stays importable for outside code."""
from features.schedmate_text.vocab import (DATASET_RULES, DATASET_TASK, MODEL_RULES, MODEL_TASK, TASK_SIGNALS,
                                           canonical_dataset, canonical_model, known_model, norm, task_from_signals)

__all__ = ["DATASET_RULES", "DATASET_TASK", "MODEL_RULES", "MODEL_TASK", "TASK_SIGNALS", "canonical_dataset",
           "canonical_model", "known_model", "norm", "task_from_signals"]
