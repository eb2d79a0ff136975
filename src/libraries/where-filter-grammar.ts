// The WHERE grammar of published libraries (api-map §5, "Settled details (libraries)"), in Peggy's
// notation; where-filter.ts compiles it with Peggy when it loads. It builds an AST only: where-filter.ts
// type-checks it against the dataset's fields and turns it into parameterised SQL. Precedence: `not`
// binds tighter than `and`, `and` tighter than `or`. Keywords and letter operators are
// case-insensitive and whole words (`order` is a name, not `or` + `der`). Nothing else is accepted:
// no `;`, comment, subquery or function call has a rule, so each is a parse error at its first
// character. The grammar is a module rather than a file beside the code so that it travels with
// whatever loads it: the hub's bundle, the library worker placed for job users, the tests.
// (String.raw: backslashes are the grammar's own; the grammar holds no backtick and no `${`.)
export const WHERE_GRAMMAR = String.raw`
{{
  const MONTHS = { JAN: 1, FEB: 2, MAR: 3, APR: 4, MAY: 5, JUN: 6, JUL: 7, AUG: 8, SEP: 9, OCT: 10, NOV: 11, DEC: 12 };
  const pad = (n, width) => String(n).padStart(width, '0');
  const leap = (y) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
}}

Filter
  = _ expression:Or _ { return expression; }

Or
  = head:And tail:(_ OR _ @And)* { return tail.length === 0 ? head : { kind: 'or', items: [head, ...tail], at: location().start.offset }; }

And
  = head:Not tail:(_ AND _ @Not)* { return tail.length === 0 ? head : { kind: 'and', items: [head, ...tail], at: location().start.offset }; }

Not
  = NOT _ item:Not { return { kind: 'not', item, at: location().start.offset }; }
  / Predicate

Predicate
  = "(" _ expression:Or _ ")" { return expression; }
  / Condition

Condition
  = operand:Operand _ IS _ negated:(@NOT _)? (MISSING / NULL)
    { return { kind: 'missing', operand, negated: negated !== null, at: location().start.offset }; }
  / operand:Operand _ negated:(@NOT _)? IN _ "(" _ head:Literal tail:(_ "," _ @Literal)* _ ")"
    { return { kind: 'in', operand, values: [head, ...tail], negated: negated !== null, at: location().start.offset }; }
  / operand:Operand _ negated:(@NOT _)? BETWEEN _ low:Operand _ AND _ high:Operand
    { return { kind: 'between', operand, low, high, negated: negated !== null, at: location().start.offset }; }
  / operand:Operand _ negated:(@NOT _)? (CONTAINS / "?") _ value:Operand
    { return { kind: 'contains', operand, value, negated: negated !== null, at: location().start.offset }; }
  / operand:Operand _ negated:(@NOT _)? LIKE _ pattern:Operand
    { return { kind: 'like', operand, pattern, negated: negated !== null, at: location().start.offset }; }
  / left:Operand _ op:Comparison _ right:Operand
    { return { kind: 'compare', op, left, right, at: location().start.offset }; }
  / operand:Operand
    { return { kind: 'truth', operand, at: location().start.offset }; }

Comparison "comparison operator"
  = "<=" { return 'le'; } / ">=" { return 'ge'; } / "^=" { return 'ne'; } / "~=" { return 'ne'; }
  / "=" { return 'eq'; } / "<" { return 'lt'; } / ">" { return 'gt'; }
  / op:(EQ / NE / LE / LT / GE / GT) { return op.toLowerCase(); }

Operand
  = Field
  / Literal

Field "field name"
  = !Keyword name:$([A-Za-z_] [A-Za-z0-9_]*) { return { kind: 'field', name, at: location().start.offset }; }
  / value:Quoted [nN] !NameChar { return { kind: 'field', name: value, at: location().start.offset }; }

Literal "value"
  = DateTimeLiteral
  / DateLiteral
  / value:Quoted !NameChar { return { kind: 'string', value, at: location().start.offset }; }
  / NumberLiteral
  / TRUE { return { kind: 'boolean', value: true, at: location().start.offset }; }
  / FALSE { return { kind: 'boolean', value: false, at: location().start.offset }; }

NumberLiteral "number"
  = text:$("-"? (Digits ("." Digits?)? / "." Digits) ([eE] [+-]? Digits)?) !NameChar
    { return { kind: 'number', value: Number(text), at: location().start.offset }; }

Digits = [0-9]+

Quoted "quoted string"
  = "'" chars:("''" { return "'"; } / [^'])* "'" { return chars.join(''); }
  / '"' chars:('""' { return '"'; } / [^"])* '"' { return chars.join(''); }

// 'ddMONyyyy'd: the day, the month's three letters (any case), a four-digit year; an impossible date fails here.
DateLiteral "date literal"
  = quote:['"] day:$([0-9] [0-9]?) month:$([A-Za-z] [A-Za-z] [A-Za-z]) year:$([0-9] [0-9] [0-9] [0-9]) end:['"] [dD] !NameChar
    & { return quote === end; }
    {
      const m = MONTHS[month.toUpperCase()];
      const y = Number(year);
      const d = Number(day);
      if (!m || d < 1 || d > (m === 2 && leap(y) ? 29 : DAYS[m - 1])) error(day + month + year + ' is not a date');
      return { kind: 'date', value: year + '-' + pad(m, 2) + '-' + pad(d, 2), at: location().start.offset };
    }

// 'ddMONyyyy:hh:mm:ss'dt (seconds optional): a date-time literal.
DateTimeLiteral "date-time literal"
  = quote:['"] day:$([0-9] [0-9]?) month:$([A-Za-z] [A-Za-z] [A-Za-z]) year:$([0-9] [0-9] [0-9] [0-9])
    ":" hour:$([0-9] [0-9]?) ":" minute:$([0-9] [0-9]) second:(":" @$([0-9] [0-9]))? end:['"] [dD] [tT] !NameChar
    & { return quote === end; }
    {
      const m = MONTHS[month.toUpperCase()];
      const y = Number(year);
      const d = Number(day);
      if (!m || d < 1 || d > (m === 2 && leap(y) ? 29 : DAYS[m - 1])) error(day + month + year + ' is not a date');
      if (Number(hour) > 23 || Number(minute) > 59 || Number(second ?? 0) > 59) error(hour + ':' + minute + (second ? ':' + second : '') + ' is not a time of day');
      return { kind: 'datetime', value: year + '-' + pad(m, 2) + '-' + pad(d, 2) + ' ' + pad(hour, 2) + ':' + minute + ':' + (second ?? '00'), at: location().start.offset };
    }

NameChar = [A-Za-z0-9_]

Keyword = (AND / OR / NOT / IN / BETWEEN / CONTAINS / LIKE / IS / MISSING / NULL / EQ / NE / LT / LE / GT / GE / TRUE / FALSE)

AND = @$"and"i !NameChar
OR = @$"or"i !NameChar
NOT = @$"not"i !NameChar
IN = @$"in"i !NameChar
BETWEEN = @$"between"i !NameChar
CONTAINS = @$"contains"i !NameChar
LIKE = @$"like"i !NameChar
IS = @$"is"i !NameChar
MISSING = @$"missing"i !NameChar
NULL = @$"null"i !NameChar
EQ = @$"eq"i !NameChar
NE = @$"ne"i !NameChar
LT = @$"lt"i !NameChar
LE = @$"le"i !NameChar
GT = @$"gt"i !NameChar
GE = @$"ge"i !NameChar
TRUE = @$"true"i !NameChar
FALSE = @$"false"i !NameChar

_ "whitespace"
  = [ \t\r\n]*
`;
