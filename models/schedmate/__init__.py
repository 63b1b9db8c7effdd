"""SchedMate (semantic-aware scheduling): metadata extraction, the Scheduling Advisor, the Metric
Tracker and the Failure Handler — offline and deterministic by default (static analysis, regular
expressions, MiniLM or hashed n-gram embeddings); an LLM back-end is optional.

Submodules are imported on demand (`from models.schedmate.advisor import SchedulingAdvisor`); none of
them imports torch at module level."""
