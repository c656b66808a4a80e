"""The servers behind the gateway: one supervised connection each, and their list-change notifications."""
