"""What the tests share, one module per job; a test module imports these, never another test
module (tests/test_layout.py checks it)."""
