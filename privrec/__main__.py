import sys

from privrec.cli import main

sys.exit(main())
