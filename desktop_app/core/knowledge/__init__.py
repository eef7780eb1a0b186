"""DoctorRAG: the knowledge base, the patient case base, retrieval and answers."""
