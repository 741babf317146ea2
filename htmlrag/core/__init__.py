"""Infrastructure every stage may use, and nothing of ours above it: errors, logging, file input, content-keyed
caches, secrets redaction, code fingerprints and model loading (:mod:`htmlrag.core.models`).

Imports: the standard library and third-party packages only (``core.models`` imports ``core`` modules).
Only :mod:`htmlrag.core.models` shapes prediction rows (model dtypes and devices); the rest is storage and
plumbing, outside the run id (:mod:`htmlrag.core.fingerprint`).
"""
