"""Releases: run a mechanism on a dataset, write data + certificate as one folder, read it back checked.

Where is ...?
  a release folder (write once, lock, verify hashes)   -> privrec.release.folder
  the certificate layout                               -> privrec.release.certificate
  running a mechanism with the refusals a release needs -> privrec.release.publish
  published rows / matrices <-> tables, id checks      -> privrec.release.tables
  outputs that can never overwrite inputs              -> privrec.release.paths

``privrec publish`` and every ``reproduce`` use this layer; mechanisms themselves
(:mod:`privrec.privacy`) never touch files.
"""

from privrec.release.folder import CERTIFICATE, FORMAT, Release, ReleaseError, read_release, write_release

__all__ = ["CERTIFICATE", "FORMAT", "Release", "ReleaseError", "read_release", "write_release"]
