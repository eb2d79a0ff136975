import { getMetadataStorage, IsOptional } from 'class-validator';
import { ApiProperty, documentedProperty } from '../http/openapi-decorators.js';

type SchemaType = StringConstructor | BooleanConstructor | NumberConstructor | 'integer';

/**
 * The JSON type each scalar validator checks; the others (lengths, ranges) tell nothing, and arrays and
 * objects state their schema in their ApiProperty.
 */
const VALIDATED_TYPES: Readonly<Record<string, SchemaType>> = {
  isString: String,
  matches: String,
  isEmail: String,
  isUuid: String,
  isDateTime: String,
  isBoolean: Boolean,
  isInt: 'integer',
  isNumber: Number,
};

/** The type the validators already registered on a property check, if they agree on one. */
function validatedType(target: object, property: string): SchemaType | undefined {
  const types = getMetadataStorage()
    .getTargetValidationMetadatas(target.constructor, '', true, false)
    .filter((metadata) => metadata.propertyName === property && !metadata.each)
    .map((metadata) => VALIDATED_TYPES[metadata.name ?? ''])
    .filter((type) => type !== undefined);
  return new Set(types).size === 1 ? types[0] : undefined;
}

/**
 * A body property that may be absent or `null` (null clears it): validation skips it then, and the
 * OpenAPI document marks it nullable, with the type its validators check. TypeScript reflects a
 * `string | null` property as `Object`, which is why the type comes from the validators; put this
 * decorator above them (decorators apply bottom-up). Every other property refuses `null` like any
 * wrong type: see {@link isNullable}.
 */
export function Nullable(): PropertyDecorator {
  return (target, property) => {
    IsOptional()(target, property);
    const type = validatedType(target, String(property));
    ApiProperty({ required: false, nullable: true, ...(type && { type }) })(target, property);
  };
}

/** Whether the document marks this property of a DTO nullable (so that `null` is a value for it). */
export function isNullable(dto: object, property: string): boolean {
  return documentedProperty(dto, property)?.nullable === true;
}

/** Whether the document declares this property of a DTO (hidden, server-owned fields are not). */
export function isDocumented(dto: object, property: string): boolean {
  return documentedProperty(dto, property) !== undefined;
}
