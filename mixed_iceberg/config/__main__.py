"""``python -m mixed_iceberg.config``: print ``docs/options.md``, the table of every option."""

import sys

from mixed_iceberg.config.registry import options_markdown

sys.stdout.write(options_markdown())
