"""The Redis backend (redis-py asyncio), imported only when `store.backend: redis` is configured."""
