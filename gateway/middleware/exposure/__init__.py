"""What a session's window holds: the middleware, the per-session view, the search index, find/call."""
