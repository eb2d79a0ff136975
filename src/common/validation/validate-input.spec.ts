import { describe, expect, it } from '@jest/globals';
import { ApiProperty, ApiPropertyOptional } from '../http/openapi-decorators.js';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsInt, IsOptional, IsString, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';
import { InvalidInputError } from '../errors/hub-errors.js';
import { Nullable } from './nullable.js';
import { ServerOwnedFields } from './server-owned-fields.js';
import { isPlainObject, validateInput, validateInputList } from './validate-input.js';

class ItemDto {
  @IsString()
  @MinLength(1)
  name!: string;
}

class OrderDto {
  @IsString()
  @MinLength(1)
  @MaxLength(20)
  title!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  count?: number;

  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ItemDto)
  items!: ItemDto[];

  @IsOptional()
  @ValidateNested()
  @Type(() => ItemDto)
  owner?: ItemDto;
}

class TagDto {
  @ApiProperty()
  @IsString()
  label!: string;

  @ApiPropertyOptional()
  @IsOptional()
  @IsString()
  colour?: string;
}

/** Properties as the document shows them: some nullable (`@Nullable`), the others not. */
class ProfileDto {
  @ApiPropertyOptional({ maxLength: 10 })
  @Nullable()
  @IsString()
  @MaxLength(10)
  nickname?: string | null;

  @ApiPropertyOptional()
  @Nullable()
  @IsBoolean()
  active?: boolean | null;

  @ApiPropertyOptional()
  @IsOptional()
  @IsInt()
  age?: number;

  @ApiPropertyOptional({ type: [TagDto] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(5)
  @ValidateNested({ each: true })
  @Type(() => TagDto)
  tags?: TagDto[];
}

class NoteDto extends ServerOwnedFields {
  @IsString()
  text!: string;
}

/** Awaits `promise`, expects an InvalidInputError, and returns it. */
async function invalidInput(promise: Promise<unknown>): Promise<InvalidInputError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return error as InvalidInputError;
  }
  throw new Error('expected an InvalidInputError, but the body was accepted');
}

/** The distinct paths of an error's field errors, in order. */
function errorPaths(error: InvalidInputError): string[] {
  return [...new Set((error.errors ?? []).map((fieldError) => fieldError.path))];
}

describe('isPlainObject', () => {
  it('is true for objects', () => {
    expect(isPlainObject({})).toBe(true);
    expect(isPlainObject({ a: 1 })).toBe(true);
  });

  it.each([
    ['an array', []],
    ['null', null],
    ['undefined', undefined],
    ['a string', 'x'],
    ['a number', 1],
    ['a boolean', true],
  ])('is false for %s', (_label, value) => {
    expect(isPlainObject(value)).toBe(false);
  });
});

describe('validateInput', () => {
  const validOrder = () => ({ title: 'order', count: 2, items: [{ name: 'a' }, { name: 'b' }], owner: { name: 'ann' } });

  it('returns an instance of the DTO class for a valid body', async () => {
    const order = await validateInput(OrderDto, validOrder());
    expect(order).toBeInstanceOf(OrderDto);
    expect(order).toEqual(Object.assign(new OrderDto(), validOrder()));
  });

  it('turns nested objects into instances of their DTO classes', async () => {
    const order = await validateInput(OrderDto, validOrder());
    expect(order.items[0]).toBeInstanceOf(ItemDto);
    expect(order.owner).toBeInstanceOf(ItemDto);
  });

  it('accepts a body without the optional properties', async () => {
    const order = await validateInput(OrderDto, { title: 'order', items: [] });
    expect(order).toMatchObject({ title: 'order', items: [] });
  });

  it.each([
    ['an array', [{ title: 'order', items: [] }]],
    ['a string', '{"title":"order"}'],
    ['null', null],
    ['a number', 42],
    ['undefined', undefined],
    ['a boolean', false],
  ])('refuses a body that is %s, at path ""', async (_label, body) => {
    const error = await invalidInput(validateInput(OrderDto, body));
    expect(error.status).toBe(400);
    expect(error.errors).toEqual([{ path: '', message: expect.any(String) }]);
  });

  it('refuses an unknown property at its path', async () => {
    const error = await invalidInput(validateInput(OrderDto, { ...validOrder(), name: 'x' }));
    expect(errorPaths(error)).toEqual(['/name']);
    expect(error.message).toContain('name');
  });

  it('refuses an unknown property of a nested object at its nested path', async () => {
    const body = { ...validOrder(), items: [{ name: 'a' }, { name: 'b', colour: 'red' }] };
    expect(errorPaths(await invalidInput(validateInput(OrderDto, body)))).toEqual(['/items/1/colour']);
  });

  it('escapes / and ~ in property names in the JSON Pointer', async () => {
    const error = await invalidInput(validateInput(OrderDto, { ...validOrder(), 'a/b~c': 1 }));
    expect(errorPaths(error)).toEqual(['/a~1b~0c']);
  });

  it('reports a bad property at its path', async () => {
    const error = await invalidInput(validateInput(OrderDto, { ...validOrder(), count: 0 }));
    expect(errorPaths(error)).toEqual(['/count']);
    expect(error.message).toContain('count');
  });

  it('reports a missing required property at its path', async () => {
    const { title: _title, ...body } = validOrder();
    expect(errorPaths(await invalidInput(validateInput(OrderDto, body)))).toEqual(['/title']);
  });

  it('reports an error inside an array item with the JSON Pointer of the item', async () => {
    const body = { ...validOrder(), items: [{ name: 'a' }, { name: 'b' }, { name: 3 }] };
    expect(errorPaths(await invalidInput(validateInput(OrderDto, body)))).toEqual(['/items/2/name']);
  });

  it('reports an error inside a nested object with its JSON Pointer', async () => {
    const body = { ...validOrder(), owner: { name: '' } };
    expect(errorPaths(await invalidInput(validateInput(OrderDto, body)))).toEqual(['/owner/name']);
  });

  it('lists every problem', async () => {
    const body = { title: '', count: 'two', items: [{ name: 'ok' }, {}], owner: { name: 1 }, extra: true };
    const error = await invalidInput(validateInput(OrderDto, body));
    expect([...errorPaths(error)].sort()).toEqual(['/count', '/extra', '/items/1/name', '/owner/name', '/title']);
    expect(error.message).toMatch(/^Invalid request body: /);
    for (const fieldError of error.errors ?? []) expect(fieldError.message).not.toBe('');
  });

  it('gives each field error a message that is part of the overall message', async () => {
    const error = await invalidInput(validateInput(OrderDto, { title: 'x'.repeat(21), items: 'none' }));
    expect(errorPaths(error).sort()).toEqual(['/items', '/title']);
    for (const fieldError of error.errors ?? []) expect(error.message).toContain(fieldError.message);
  });

  describe('DTOs extending ServerOwnedFields', () => {
    it('accept _id, _created and _modified, whatever their values', async () => {
      const note = await validateInput(NoteDto, { _id: 12, _created: { any: 'thing' }, _modified: null, text: 'hello' });
      expect(note).toBeInstanceOf(NoteDto);
      expect(note.text).toBe('hello');
    });

    it('still validate their own properties', async () => {
      const error = await invalidInput(validateInput(NoteDto, { _id: 'x', text: 5 }));
      expect(errorPaths(error)).toEqual(['/text']);
    });

    it('still refuse other unknown properties', async () => {
      const error = await invalidInput(validateInput(NoteDto, { _id: 'x', text: 'hi', _owner: 'me' }));
      expect(errorPaths(error)).toEqual(['/_owner']);
    });
  });

  it('refuses _id on a DTO that does not extend ServerOwnedFields', async () => {
    const error = await invalidInput(validateInput(ItemDto, { _id: 'x', name: 'a' }));
    expect(errorPaths(error)).toEqual(['/_id']);
  });
});

describe('null', () => {
  it('is a value of the properties the document marks nullable', async () => {
    const profile = await validateInput(ProfileDto, { nickname: null, active: null });
    expect(profile).toMatchObject({ nickname: null, active: null });
  });

  it('is refused like a wrong type on an optional property that is not nullable, naming it', async () => {
    const error = await invalidInput(validateInput(ProfileDto, { nickname: null, age: null }));
    expect(error.errors).toEqual([{ path: '/age', message: 'age must not be null' }]);
    expect(error.message).toContain('age must not be null');
  });

  it('is refused in nested objects and array items, at their paths', async () => {
    const error = await invalidInput(validateInput(ProfileDto, { tags: [{ label: 'a', colour: null }, { label: null }] }));
    expect(errorPaths(error).sort()).toEqual(['/tags/0/colour', '/tags/1/label']);
  });

  it('is refused where a nested DTO or an array is expected', async () => {
    expect(errorPaths(await invalidInput(validateInput(ProfileDto, { tags: null })))).toEqual(['/tags']);
  });
});

describe('the work of validating a hostile body', () => {
  it('walks an array over its size limit only one item past the limit', async () => {
    const tags = Array.from({ length: 10_000 }, () => ({ label: 1 }));
    const error = await invalidInput(validateInput(ProfileDto, { tags }));
    expect(error.errors?.[0]).toMatchObject({ path: '/tags', message: expect.stringContaining('no more than 5') });
    expect(errorPaths(error)).toEqual(['/tags', '/tags/0/label', '/tags/1/label', '/tags/2/label', '/tags/3/label', '/tags/4/label', '/tags/5/label']);
  });

  it('still names every rule a property breaks', async () => {
    const error = await invalidInput(validateInput(ProfileDto, { nickname: 12 }));
    expect(error.errors).toEqual([{ path: '/nickname', message: expect.stringMatching(/string.*10|10.*string/) }]);
  });
});

describe('validateInputList', () => {
  it('returns an instance per item', async () => {
    const items = await validateInputList(ItemDto, [{ name: 'a' }, { name: 'b' }], 10);
    expect(items).toEqual([Object.assign(new ItemDto(), { name: 'a' }), Object.assign(new ItemDto(), { name: 'b' })]);
    expect(items[0]).toBeInstanceOf(ItemDto);
  });

  it.each([
    ['an object', { name: 'a' }],
    ['an empty array', []],
    ['an array over the limit', [{ name: 'a' }, { name: 'b' }, { name: 'c' }]],
  ])('refuses a body that is %s, at path ""', async (_label, body) => {
    const error = await invalidInput(validateInputList(ItemDto, body, 2));
    expect(errorPaths(error)).toEqual(['']);
  });

  it('reports every bad item with its index in the path', async () => {
    const error = await invalidInput(validateInputList(ItemDto, [{ name: 'ok' }, { name: '' }, 'text', { name: 'x', extra: 1 }], 10));
    expect(errorPaths(error)).toEqual(['/2']);
    const second = await invalidInput(validateInputList(ItemDto, [{ name: 'ok' }, { name: '' }, { name: 'x', extra: 1 }], 10));
    expect(errorPaths(second)).toEqual(['/1/name', '/2/extra']);
  });
});
