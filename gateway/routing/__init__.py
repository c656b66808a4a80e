"""What is reachable behind the gateway and how a call gets there: the merged, cached catalog of all
downstreams, exposed names and URIs, and the forward."""
