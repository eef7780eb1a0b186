"""Lumen's pipelines: Ask and Simplify (LAMP-MedQA); Knowledge (DoctorRAG) lives in core/knowledge."""
