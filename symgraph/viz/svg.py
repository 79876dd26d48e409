"""A few lines of SVG, written directly (no plotting library): text escaped, numbers
rounded, one document per drawing."""
from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

__all__ = ['Svg']


class Svg:
    """An SVG document of ``width`` x ``height`` pixels built element by element;
    ``str()`` is the document."""

    def __init__(self, width, height, title=None):
        self.width, self.height = int(width), int(height)
        self.parts = []
        if title:
            self.parts.append('<title>%s</title>' % escape(title))

    def _attrs(self, kw):
        return ''.join(' %s=%s' % (k.rstrip('_').replace('_', '-'), quoteattr(_num(v)))
                       for k, v in kw.items() if v is not None)

    def rect(self, x, y, w, h, tip=None, **kw):
        body = '<title>%s</title>' % escape(tip) if tip else ''
        self.parts.append('<rect x="%s" y="%s" width="%s" height="%s"%s>%s</rect>'
                          % (_num(x), _num(y), _num(w), _num(h), self._attrs(kw), body))

    def line(self, x1, y1, x2, y2, **kw):
        self.parts.append('<line x1="%s" y1="%s" x2="%s" y2="%s"%s/>'
                          % (_num(x1), _num(y1), _num(x2), _num(y2), self._attrs(kw)))

    def path(self, d, **kw):
        self.parts.append('<path d=%s%s/>' % (quoteattr(d), self._attrs(kw)))

    def text(self, x, y, s, **kw):
        self.parts.append('<text x="%s" y="%s"%s>%s</text>'
                          % (_num(x), _num(y), self._attrs(kw), escape(str(s))))

    def __str__(self):
        return ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
                'viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">\n%s\n</svg>\n'
                % (self.width, self.height, self.width, self.height, '\n'.join(self.parts)))


def _num(v):
    if isinstance(v, float):
        return ('%.2f' % v).rstrip('0').rstrip('.')
    return str(v)
