"""Helpers shared by the test suites: real services and independent readers."""
