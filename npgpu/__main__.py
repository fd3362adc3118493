"""``python -m npgpu``: the same command line as the ``npgpu`` program.

Kept to one call so that ``npgpu run``'s tracebacks start at the user's script.
"""

import sys

from npgpu.cli import main

if __name__ == "__main__":
    sys.exit(main())
