"""What the gateway offers: exposed names, the merged and cached catalog of all downstreams, resolve and forward."""
