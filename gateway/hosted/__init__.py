"""The gateway's own tools and resources, served in-process so they take the same path as any downstream."""
