"""The composition root and its runners: the command line, config -> a running gateway, serving, and hot reload."""
