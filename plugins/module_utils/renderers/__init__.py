# -*- coding: utf-8 -*-
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Renderers: where each failover setting lives per distribution, and in what shape.

Every renderer is a pure function: it takes a parsed YAML document and the wanted
settings, and returns a new document plus a list of human-readable changes. No I/O here;
plugins/module_utils/files.py does the safe reading and writing.
"""
