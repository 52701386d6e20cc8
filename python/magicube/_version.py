__version__ = "0.1.0"  # the C library's MAGICUBE_VERSION_STRING (tests/test_plan.py checks they agree)
