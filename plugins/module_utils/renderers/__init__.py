# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Renderers: where each failover setting lives per distribution, and in what shape.

Every renderer is a pure function: it takes a parsed YAML document and the wanted
settings, and returns a new document plus a list of human-readable changes. No I/O here;
plugins/module_utils/files.py does the safe reading and writing.
"""
