"""``urna serve``: the HTTP API (compatible routes and /v1) and a search page, over .urna files."""
