"""Infrastructure every stage may use, and nothing of ours above it: errors, logging, file input, content-keyed
caches, secrets redaction, code fingerprints, model loading (:mod:`htmlrag.core.models`) and what a metric sees
with the answer normalisation every metric uses (:mod:`htmlrag.core.answers`).

Imports: the standard library and third-party packages only (``core.models`` imports ``core`` modules).
Only :mod:`htmlrag.core.models` (model dtypes and devices) and :mod:`htmlrag.core.answers` shape prediction rows;
the rest is storage and plumbing, outside the run id (:mod:`htmlrag.core.fingerprint`).
"""
