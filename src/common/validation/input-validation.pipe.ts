import { Injectable, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import type { ClassConstructor } from 'class-transformer';
import { validateInput, validateInputList } from './validate-input.js';

const UNVALIDATED_TYPES = new Set<unknown>([Object, Array, String, Number, Boolean, undefined]);

/** Validates every `@Body()` typed with a DTO class; other parameters pass through. */
@Injectable()
export class InputValidationPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'body' || UNVALIDATED_TYPES.has(metadata.metatype)) return value;
    return validateInput(metadata.metatype as new () => object, value);
  }
}

/** Validates a `@Body()` that is an array of DTOs: `@Body(new InputListPipe(ItemDto, 1000))`. */
export class InputListPipe<T extends object> implements PipeTransform<unknown, Promise<T[]>> {
  constructor(
    private readonly dto: ClassConstructor<T>,
    private readonly maxItems: number,
  ) {}

  transform(value: unknown): Promise<T[]> {
    return validateInputList(this.dto, value, this.maxItems);
  }
}
