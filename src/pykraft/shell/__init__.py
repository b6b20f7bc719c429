"""The metadata shell: browse a snapshot or a metadata log as Kafka's file tree."""

from pykraft.shell.commands import COMMANDS, MetadataShell, Output
from pykraft.shell.tree import DirNode, FileNode, image_tree

__all__ = ["COMMANDS", "DirNode", "FileNode", "MetadataShell", "Output", "image_tree"]
