"""Moved to :mod:`features.schedmate_text.extract` (feature extraction, not a model); this name stays
importable for outside code."""
from features.schedmate_text.extract import FIELDS, JobMetadata, extract_metadata, read_repository

__all__ = ["FIELDS", "JobMetadata", "extract_metadata", "read_repository"]
