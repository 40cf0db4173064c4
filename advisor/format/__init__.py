"""The format layer: the profile's fields and vocabulary, its schema and migrations, the typed tree a validated profile
becomes, the metrics' definitions and how numbers are written. It imports nothing else of advisor but its errors."""
