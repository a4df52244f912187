"""The documentation site's build steps (``make docs``, ``make docs-check``): Mermaid fetched
from the npm registry (``mermaid``), the examples written by real runs (``examples``), the
built site's internal links checked (``links``) and its pages opened in headless Chromium
(``browser``). Not shipped: neither the layer nor the CLI imports this package."""
