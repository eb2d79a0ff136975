import { Injectable, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { validateInput } from './validate-input.js';

const UNVALIDATED_TYPES = new Set<unknown>([Object, Array, String, Number, Boolean, undefined]);

/** Validates every `@Body()` typed with a DTO class; other parameters pass through. */
@Injectable()
export class InputValidationPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'body' || UNVALIDATED_TYPES.has(metadata.metatype)) return value;
    return validateInput(metadata.metatype as new () => object, value);
  }
}
