//! Immutable sorted files: format, writer, memory-mapped reader, I/O seam.
