"""Export: ONNX graphs of the query and document encoders, and their parity with torch."""
