"""The stack's constructs, one per module; each is safe by default (SSL-only, encrypted, no public access) and
writes its IAM statements out in full, so the synthesized policies read the same as what is reviewed."""
