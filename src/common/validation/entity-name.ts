import { applyDecorators } from '@nestjs/common';
import { IsString, Matches } from 'class-validator';

/** The names of groups, roles, auth domains and execution profiles: letters, digits, "_", ".", "@", "-", and spaces inside. */
export const ENTITY_NAME = /^[\p{L}\p{N}_.@-](?:[\p{L}\p{N}_.@ -]{0,126}[\p{L}\p{N}_.@-])?$/u;
export const ENTITY_NAME_RULE = 'name must be 1-128 letters, digits, "_", ".", "@", "-" or inner spaces';

/** Validates a `name` property against {@link ENTITY_NAME}. */
export function IsEntityName(): PropertyDecorator {
  return applyDecorators(IsString(), Matches(ENTITY_NAME, { message: ENTITY_NAME_RULE }));
}
