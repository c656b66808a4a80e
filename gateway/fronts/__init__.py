"""Client-facing: the SDK server that turns requests into `Call`s, the stdio and HTTP transports, the HTTP lane."""
