"""Studies: searches and sweeps over scenarios, built on the API."""
