"""The offline glossary: Lumen's own entries, imported MedlinePlus topics, staff additions."""
