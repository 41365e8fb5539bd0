"""Generated protobuf bindings of ``protos/`` (see tools/gen_protos.py). Do not edit."""
