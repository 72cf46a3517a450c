"""``python -m kafkalab.cli``: the ``kafkalab`` console script."""

import sys

from kafkalab.cli import main

sys.exit(main())
