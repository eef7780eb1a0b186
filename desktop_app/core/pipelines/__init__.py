"""Lumen's pipelines: Ask and Simplify (LAMP-MedQA), later Knowledge (DoctorRAG)."""
