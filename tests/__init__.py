"""The test suite: it mirrors the packages (one folder each), with shared fixtures in tests/fixtures."""
