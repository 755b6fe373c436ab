/* tensor_json.c: (being written) */
