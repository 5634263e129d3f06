"""The optional learned classifier (scikit-learn): consulted only when no root rule matched."""
