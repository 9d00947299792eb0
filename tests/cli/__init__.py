"""Tests of the envwright command line."""
