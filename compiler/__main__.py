import sys

from charter.compiler.cli import main

sys.exit(main())
