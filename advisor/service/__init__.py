"""The collection service and its client: ``advisor serve`` keeps contributed profiles in a database (SQLite or
PostgreSQL) behind an HTTP API and checks each before anything is stored; ``advisor submit`` scrubs a profile,
shows what it will send and sends it; ``--collection URL`` reads a service's profiles through a cache on disk.

- :mod:`~advisor.service.privacy`: what a profile must not carry (host names, home paths, addresses, serials), one
  table for the client's scrubbing and the server's refusal;
- :mod:`~advisor.service.checks`: the server's checks of an upload, a table walked by one function;
- :mod:`~advisor.service.plausibility`: a time against the device's physical bound and the model's range;
- :mod:`~advisor.service.storage`: the database, one interface over SQLite and PostgreSQL, numbered migrations;
- :mod:`~advisor.service.app`: the HTTP API (FastAPI);
- :mod:`~advisor.service.client`: submitting, and reading a collection through its cache.
"""
