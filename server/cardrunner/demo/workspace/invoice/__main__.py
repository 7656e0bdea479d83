"""Run the invoice editor: python -m invoice"""

from invoice.app import InvoiceApp

if __name__ == "__main__":
    InvoiceApp().run()
