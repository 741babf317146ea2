"""The HTML stage: decode and parse pages, lossless cleaning, the block tree (Algorithm 1), context formats.

Pure functions from bytes or text to trees and strings; no models, no I/O beyond decoding. Imports: :mod:`htmlrag.core`.
"""
