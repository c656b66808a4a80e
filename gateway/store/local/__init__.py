"""The local backend: files and memory."""
