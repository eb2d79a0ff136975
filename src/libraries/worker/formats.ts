// Display strings for `formatted` fields (api-map §5): a value shown as its field's format says.
// SAS formats the worker knows (w.d, BESTw., COMMAw.d, DOLLARw.d, PERCENTw.d, Ew., DATEw., YYMMDDw.,
// MMDDYYw., DDMMYYw., MONYYw., DATETIMEw., $w.) are applied; a field without a format, or with one
// not known here, shows its value's plain text (numbers as JavaScript prints them, dates
// YYYY-MM-DD, date-times ISO 8601, booleans true/false). A missing value stays null.
import type { DatasetField } from './types.js';

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

interface Format {
  readonly name: string;
  readonly width?: number;
  readonly decimals?: number;
}

/** Splits `DOLLAR12.2` into its name, width and decimals, reading characters one by one. */
function parseFormat(text: string): Format {
  let i = 0;
  let name = '';
  while (i < text.length && !(text[i] >= '0' && text[i] <= '9') && text[i] !== '.') name += text[i++];
  let width = '';
  while (i < text.length && text[i] >= '0' && text[i] <= '9') width += text[i++];
  let decimals = '';
  if (text[i] === '.') {
    i++;
    while (i < text.length && text[i] >= '0' && text[i] <= '9') decimals += text[i++];
  }
  return { name: name.toUpperCase(), width: width === '' ? undefined : Number(width), decimals: decimals === '' ? undefined : Number(decimals) };
}

const grouped = (value: number, decimals: number) =>
  value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals, useGrouping: true });

function formatNumber(value: number, format: Format): string {
  const decimals = format.decimals ?? 0;
  switch (format.name) {
    case '':
    case 'F':
      return value.toFixed(decimals);
    case 'COMMA':
      return grouped(value, decimals);
    case 'DOLLAR':
      return `${value < 0 ? '-' : ''}$${grouped(Math.abs(value), decimals)}`;
    case 'PERCENT':
      return `${(value * 100).toFixed(decimals)}%`;
    case 'E':
      return value.toExponential(Math.max(0, (format.width ?? 12) - 7));
    case 'BEST':
      return String(Number(value.toPrecision(Math.min(Math.max(format.width ?? 12, 1), 21))));
    default:
      return String(value);
  }
}

function formatDate(iso: string, format: Format): string {
  const [year, month, day] = [iso.slice(0, 4), Number(iso.slice(5, 7)), iso.slice(8, 10)];
  const mon = MONTHS[month - 1] ?? '';
  const mm = iso.slice(5, 7);
  switch (format.name) {
    case 'DATE':
      return (format.width ?? 9) < 9 ? `${day}${mon}${year.slice(2)}` : `${day}${mon}${year}`;
    case 'YYMMDD':
      return (format.width ?? 10) < 10 ? `${year.slice(2)}-${mm}-${day}` : `${year}-${mm}-${day}`;
    case 'MMDDYY':
      return `${mm}/${day}/${(format.width ?? 10) < 10 ? year.slice(2) : year}`;
    case 'DDMMYY':
      return `${day}/${mm}/${(format.width ?? 10) < 10 ? year.slice(2) : year}`;
    case 'MONYY':
      return `${mon}${(format.width ?? 7) < 7 ? year.slice(2) : year}`;
    default:
      return iso.slice(0, 10);
  }
}

/** The display string of `value` of `field`; null stays null. */
export function formatValue(value: string | number | boolean | null | undefined, field: DatasetField): string | null {
  if (value === null || value === undefined) return null;
  const format = parseFormat(field.format);
  switch (field.type) {
    case 'number':
      return field.format === '' ? String(value) : formatNumber(Number(value), format);
    case 'date':
      return formatDate(String(value), format);
    case 'datetime': {
      const text = String(value);
      if (format.name !== 'DATETIME') return text;
      return `${formatDate(text.slice(0, 10), { name: 'DATE', width: 9 })}:${text.slice(11, 19)}`;
    }
    case 'string':
      return format.name === '$' && format.width !== undefined ? String(value).slice(0, format.width) : String(value);
    case 'boolean':
      return String(value);
  }
}
