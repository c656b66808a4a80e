"""Who is calling over HTTP: static bearer tokens mapped to names, and JWT access tokens checked against the
issuer's JWKS (the gateway as an OAuth 2.1 resource server). Both end in an `Identity`."""
