package mixediceberg.flink;

import java.util.Collections;
import java.util.Set;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.format.DecodingFormat;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DeserializationFormatFactory;
import org.apache.flink.table.factories.DynamicTableFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;

/**
 * The {@code mixed-iceberg-logstore} format: a Mixed-Iceberg LogStore message ({@code net1}, Amoro's
 * LogDataJsonSerialization layout, mixed_iceberg/logstore/format.py) as one changelog row whose RowKind is the
 * message's change action. Decoding only: the LogStore is written by the ingest job (and the sink through it).
 */
public final class LogStoreFormatFactory implements DeserializationFormatFactory {
    public static final String IDENTIFIER = "mixed-iceberg-logstore";

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Collections.emptySet();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Collections.emptySet();
    }

    @Override
    public DecodingFormat<DeserializationSchema<RowData>> createDecodingFormat(
            DynamicTableFactory.Context context, ReadableConfig formatOptions) {
        FactoryUtil.validateFactoryOptions(this, formatOptions);
        return new DecodingFormat<DeserializationSchema<RowData>>() {
            @Override
            public DeserializationSchema<RowData> createRuntimeDecoder(
                    DynamicTableSource.Context sourceContext, DataType physicalDataType) {
                TypeInformation<RowData> produced = sourceContext.createTypeInformation(physicalDataType);
                return new LogStoreDeserializationSchema((RowType) physicalDataType.getLogicalType(), produced);
            }

            @Override
            public ChangelogMode getChangelogMode() {
                return ChangelogMode.all();
            }
        };
    }
}
